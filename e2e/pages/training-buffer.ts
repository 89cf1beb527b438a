/** The RL training environment's player buffer, for the bulk page's Nuwa-RL runs (issue 6). */
/**
 * The simple player of the RL training environment (models/nuwa_rl/agent.py
 * PlayerBuffer, line for line): the bulk download fills a buffer of 2 s
 * segments whose bitrate is the highest DASH rung ≤ 0.9 × the harmonic mean of
 * the last 5 interval throughputs; playback drains 1 s/s from one segment on;
 * capped at 30 s. It gives the tuner the buffer level the model was trained on.
 * e2e/src/training-buffer.test.ts checks it against vectors the Python class
 * wrote (packages/player/src/testdata/player-buffer.json, `python -m nuwa_rl.testdata`).
 */
export class TrainingPlayerBuffer {
  static readonly LADDER_BPS = [300_000, 750_000, 1_200_000, 1_850_000, 2_850_000, 4_300_000, 6_000_000, 8_000_000];
  buffer_s = 0;
  private playing = false;
  private bitrate_bps = TrainingPlayerBuffer.LADDER_BPS[0]!;
  private segment_left_s = 2;
  private recent_bps: number[] = [];

  /** Advance one interval; returns the buffer level, s. */
  step(received_bytes: number, interval_s: number): number {
    this.recent_bps = [...this.recent_bps, (received_bytes * 8) / interval_s].slice(-5);
    let bits = received_bytes * 8;
    while (bits > 0) {
      const take_s = Math.min(bits / this.bitrate_bps, this.segment_left_s);
      this.buffer_s += take_s;
      bits -= take_s * this.bitrate_bps;
      this.segment_left_s -= take_s;
      if (this.segment_left_s <= 1e-9) {
        this.segment_left_s = 2;
        const xs = this.recent_bps.filter((x) => x > 0);
        const hm = xs.length ? xs.length / xs.reduce((a, x) => a + 1 / x, 0) : 0;
        const ok = TrainingPlayerBuffer.LADDER_BPS.filter((r) => r <= 0.9 * hm);
        this.bitrate_bps = ok.length ? ok[ok.length - 1]! : TrainingPlayerBuffer.LADDER_BPS[0]!;
      }
      if (bits < 1e-6) break;
    }
    if (!this.playing && this.buffer_s >= 2) this.playing = true;
    if (this.playing) {
      this.buffer_s -= interval_s;
      if (this.buffer_s < 0) {
        this.buffer_s = 0;
        this.playing = false;
      }
    }
    this.buffer_s = Math.min(this.buffer_s, 30);
    return this.buffer_s;
  }
}
