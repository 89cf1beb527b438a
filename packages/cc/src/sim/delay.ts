/**
 * A propagation delay line under a simulated clock: items pushed with the time they come out,
 * taken in that order (ties in push order). Used for the path's one-way delays (data toward the
 * bottleneck, grants and acknowledgements back to the sender) and the sender's loss timers.
 */
export class DelayLine<T> {
  private readonly items: { at_ms: number; item: T }[] = [];
  private head = 0;

  /** Queue `item` to come out at `at_ms` (ms). Out-of-order times are placed in order (stable). */
  push(at_ms: number, item: T): void {
    let i = this.items.length;
    while (i > this.head && this.items[i - 1]!.at_ms > at_ms) i--;
    if (i === this.items.length) this.items.push({ at_ms, item });
    else this.items.splice(i, 0, { at_ms, item });
  }

  /** The next item due at or before `t_ms`, removed; undefined if none is due. */
  pop(t_ms: number): T | undefined {
    if (this.head >= this.items.length || this.items[this.head]!.at_ms > t_ms) return undefined;
    const it = this.items[this.head++]!.item;
    if (this.head > 8192 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
    return it;
  }

  /** Items still on the line. */
  get length(): number {
    return this.items.length - this.head;
  }
}
