import { afterEach, describe, expect, it, vi } from "vitest";
import { TypedEmitter } from "./emitter.js";

interface Events {
  a: { n: number };
  b: string;
}

describe("TypedEmitter", () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it("delivers events to the handlers of their type only, until unsubscribed", () => {
    const em = new TypedEmitter<Events>(["a", "b"]);
    const got: unknown[] = [];
    const off = em.on("a", (e) => got.push(e.n));
    em.on("b", (s) => got.push(s));
    em.emit("a", { n: 1 });
    em.emit("b", "x");
    off();
    off(); // twice is harmless
    em.emit("a", { n: 2 });
    expect(got).toEqual([1, "x"]);
    expect(em.listenerCount("a")).toBe(0);
    expect(em.listenerCount("b")).toBe(1);
  });

  it("gives the same function subscribed twice two subscriptions", () => {
    const em = new TypedEmitter<Events>(["a", "b"]);
    const h = vi.fn();
    const off1 = em.on("a", h);
    em.on("a", h);
    em.emit("a", { n: 1 });
    expect(h).toHaveBeenCalledTimes(2);
    off1();
    em.emit("a", { n: 2 });
    expect(h).toHaveBeenCalledTimes(3);
  });

  it("rejects an unknown type and a non-function handler with a TypeError", () => {
    const em = new TypedEmitter<Events>(["a", "b"]);
    expect(() => em.on("c" as "a", () => {})).toThrow(/unknown event type "c"; known: a, b/);
    expect(() => em.on("a", 42 as unknown as () => void)).toThrow(TypeError);
  });

  it("keeps delivering when a handler throws, and reports the error", () => {
    const errors: [unknown, string][] = [];
    const em = new TypedEmitter<Events>(["a", "b"], (err, type) => errors.push([err, type]));
    const boom = new Error("boom");
    const after = vi.fn();
    em.on("a", () => {
      throw boom;
    });
    em.on("a", after);
    em.emit("a", { n: 1 });
    expect(after).toHaveBeenCalledOnce();
    expect(errors).toEqual([[boom, "a"]]);
  });

  it("by default rethrows a handler's error outside the emit call", () => {
    const queued: (() => void)[] = [];
    vi.stubGlobal("queueMicrotask", (f: () => void) => queued.push(f));
    const em = new TypedEmitter<Events>(["a", "b"]);
    em.on("b", () => {
      throw new Error("late");
    });
    expect(() => em.emit("b", "x")).not.toThrow();
    expect(queued).toHaveLength(1);
    expect(() => queued[0]!()).toThrow("late");
  });

  it("delivers to the handlers subscribed when emit began, even if one unsubscribes another", () => {
    const em = new TypedEmitter<Events>(["a", "b"]);
    const second = vi.fn();
    let offSecond = () => {};
    em.on("a", () => offSecond());
    offSecond = em.on("a", second);
    em.emit("a", { n: 1 });
    expect(second).toHaveBeenCalledOnce();
    em.emit("a", { n: 2 });
    expect(second).toHaveBeenCalledOnce();
  });

  it("clear drops every handler", () => {
    const em = new TypedEmitter<Events>(["a", "b"]);
    const h = vi.fn();
    em.on("a", h);
    em.on("b", h);
    em.clear();
    em.emit("a", { n: 1 });
    em.emit("b", "x");
    expect(h).not.toHaveBeenCalled();
  });
});
