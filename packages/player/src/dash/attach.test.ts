/**
 * attachNuwa's `cc.tuner` option (issue 6: `cc: { tuner: "rl", model }`): bad
 * options are refused at once; a model that cannot load leaves k fixed and says
 * so in telemetry. dash.js is a recording stand-in; the session cannot open
 * here (no WebTransport), which does not stop the tuner from reporting.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { attachNuwa } from "./attach.js";

function fakes() {
  const settings: unknown[] = [];
  const player = {
    extend: () => {},
    addABRCustomRule: () => {},
    updateSettings: (s: unknown) => void settings.push(s),
    getDashMetrics: () => ({ getCurrentBufferLevel: () => 0 }),
  };
  const dashjs = { FactoryMaker: { getClassFactory: (fn: unknown) => fn, getClassFactoryByName: () => () => ({ create: () => ({}) }) } };
  return { player, dashjs, settings };
}

afterEach(() => vi.unstubAllGlobals());

describe("attachNuwa cc.tuner", () => {
  it("refuses an unknown tuner and an RL tuner without a model", () => {
    const { player, dashjs } = fakes();
    expect(() => attachNuwa(player, dashjs, { url: "https://127.0.0.1:1/nuwa", cc: { tuner: "magic" as never } })).toThrow(/cc.tuner must be "fixed" or "rl"/);
    expect(() => attachNuwa(player, dashjs, { url: "https://127.0.0.1:1/nuwa", cc: { tuner: "rl" } })).toThrow(/needs cc.model/);
  });

  it("falls back to a fixed k with a tuner_fallback event when the model does not load", async () => {
    vi.stubGlobal("WebTransport", undefined);
    vi.stubGlobal("WebSocket", undefined);
    const { player, dashjs } = fakes();
    const events: { type: string; error?: string; k_mss?: number }[] = [];
    const a = attachNuwa(player, dashjs, {
      url: "https://127.0.0.1:1/nuwa",
      cc: { tuner: "rl", model: new Uint8Array([1, 2, 3]), tuner_options: { metadata: "/nonexistent.json", fallback_k_mss: 4 } },
      reconnect: { initial_attempts: 1 },
      onTelemetry: (e) => void events.push(e as never),
    });
    a.session.catch(() => {});
    await vi.waitFor(() => expect(events.some((e) => e.type === "tuner_fallback")).toBe(true), { timeout: 5000 });
    const fb = events.find((e) => e.type === "tuner_fallback")!;
    expect(fb.k_mss).toBe(4);
    expect(fb.error).toBeTruthy();
    a.close();
  });
});
