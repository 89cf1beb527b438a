/**
 * A small typed event emitter: `on(type, handler)` returns the unsubscribe
 * function. Event types are fixed at construction, so a misspelt type is a
 * TypeError at subscription rather than a handler that never runs.
 */

/** Unsubscribe; calling it twice is harmless. */
export type Unsubscribe = () => void;

export class TypedEmitter<E extends { [K in keyof E]: unknown }> {
  private readonly handlers = new Map<keyof E, Set<(e: never) => void>>();

  /**
   * @param types every event type this emitter carries
   * @param onHandlerError called when a handler throws; the other handlers still run.
   *   Default: rethrow outside the emitting call (a microtask), as EventTarget does.
   */
  constructor(
    types: readonly (keyof E & string)[],
    private readonly onHandlerError: (err: unknown, type: keyof E & string) => void = (err) =>
      queueMicrotask(() => {
        throw err;
      }),
  ) {
    for (const t of types) this.handlers.set(t, new Set());
  }

  /**
   * Call `handler` on every event of `type` until the returned function is called.
   * @throws TypeError on an unknown type or a handler that is not a function
   */
  on<K extends keyof E & string>(type: K, handler: (e: E[K]) => void): Unsubscribe {
    const set = this.handlers.get(type);
    if (!set) throw new TypeError(`unknown event type ${JSON.stringify(type)}; known: ${[...this.handlers.keys()].join(", ")}`);
    if (typeof handler !== "function") throw new TypeError(`handler for ${JSON.stringify(type)} is not a function`);
    // Wrap so that the same function subscribed twice gets two independent subscriptions.
    const h = (e: E[K]) => handler(e);
    set.add(h as (e: never) => void);
    return () => {
      set.delete(h as (e: never) => void);
    };
  }

  /** Deliver `e` to the handlers of `type` subscribed at the time of the call. */
  emit<K extends keyof E & string>(type: K, e: E[K]): void {
    const set = this.handlers.get(type);
    if (!set || set.size === 0) return;
    for (const h of [...set]) {
      try {
        (h as (e: E[K]) => void)(e);
      } catch (err) {
        this.onHandlerError(err, type);
      }
    }
  }

  /** Number of handlers subscribed to `type`. */
  listenerCount(type: keyof E & string): number {
    return this.handlers.get(type)?.size ?? 0;
  }

  /** Drop every handler. */
  clear(): void {
    for (const set of this.handlers.values()) set.clear();
  }
}
