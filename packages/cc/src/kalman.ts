/**
 * Kalman filter on the measured one-way queuing delay, state η = [1/C, Qd]ᵀ
 * (nuwa-rl-journal §IV-B, Eq. 2–4; the GCC arrival-time filter,
 * draft-ietf-rmcat-gcc-02 §5.3, with pion/interceptor gcc as a reading).
 *
 *   measurement  D_c(t) = H(t)·η(t) + σ(t),  H(t) = [ΔM(t), 1]      (Eq. 2)
 *   state        η(t+1) = η(t) + φ(t)                               (Eq. 3)
 *   correction   η ← η + K_g·(D_c − H·η)                             (Eq. 4)
 *
 * ΔM is the size difference (bytes) between the current frame and the
 * minimum-delay frame, so 1/C is in ms per byte. With equal-sized frames ΔM ≈ 0
 * and 1/C is not observable (docs/DESIGN.md §3): the capacity it yields is reported
 * with that caveat, never trusted for the window by default.
 *
 * Units inside: ms for delay, bytes for ΔM. Process noise Q = diag(1e-13, 1e-1)
 * (KALMAN_PROCESS_NOISE) and initial covariance P0 = diag(1e-8, 1)
 * (KALMAN_INITIAL_COVARIANCE). Q's 1/C term is GCC's overuse_estimator value
 * (1e-13); its Qd term is 100× GCC's 1e-3 ms², so the filter follows a queue that
 * changes within one RTT (our Qd moves with the window; GCC's offset drifts slowly).
 * P0 is not GCC's (diag(100, 1e-1)): 1/C is in ms per byte here (about 1e-3 at
 * 10 Mbit/s), so its prior variance is 1e-8 (±1e-4 ms/byte), and Qd starts at 1 ms²
 * of doubt. The measurement noise variance R is an exponential average (weight
 * 0.01) of the squared residual clipped at 3σ (GCC §5.3), bounded to [0.25, 25] ms²,
 * starting at 4 ms².
 */
/** Process noise Q = diag(q_1/C in (ms/byte)², q_Qd in ms²), added to P at every predict step (Eq. 3). */
export const KALMAN_PROCESS_NOISE: readonly [number, number] = [1e-13, 1e-1];
/** Initial (and post-reset) covariance P0 = diag((ms/byte)², ms²). */
export const KALMAN_INITIAL_COVARIANCE: readonly [number, number] = [1e-8, 1];
/** Initial (and post-reset) measurement noise variance R, ms². */
const INITIAL_NOISE_VAR_MS2 = 4;

export class QueuingDelayKalman {
  /** η[0] = 1/C in ms per byte (Eq. 2 state). */
  private inv_capacity_ms_per_byte = 8 / 10e6 * 1000; // 10 Mbit/s prior
  /** η[1] = Qd in ms. */
  private qd_ms = 0;
  // Covariance P (symmetric 2×2).
  private p00 = KALMAN_INITIAL_COVARIANCE[0];
  private p01 = 0;
  private p11 = KALMAN_INITIAL_COVARIANCE[1];
  private noise_var_ms2 = INITIAL_NOISE_VAR_MS2; // R prior, ms²
  private readonly q00 = KALMAN_PROCESS_NOISE[0];
  private readonly q11 = KALMAN_PROCESS_NOISE[1];

  /**
   * One filter step.
   * @param measured_qd_ms D_c, the raw queuing delay of this frame, ms
   * @param delta_size_bytes ΔM, this frame's size minus the min-delay frame's size, bytes
   * @returns the filtered Qd, ms (≥ 0)
   */
  update(measured_qd_ms: number, delta_size_bytes: number): number {
    if (!Number.isFinite(measured_qd_ms) || !Number.isFinite(delta_size_bytes)) {
      throw new RangeError(`QueuingDelayKalman: non-finite input (${measured_qd_ms}, ${delta_size_bytes})`);
    }
    // Predict (Eq. 3): η unchanged, P ← P + Q.
    this.p00 += this.q00;
    this.p11 += this.q11;
    const h0 = delta_size_bytes;
    const h1 = 1;
    const residual_ms = measured_qd_ms - (h0 * this.inv_capacity_ms_per_byte + h1 * this.qd_ms);
    // Measurement noise: EWMA of residual², outliers clipped at 3σ (GCC §5.3).
    const clipped = Math.min(Math.abs(residual_ms), 3 * Math.sqrt(this.noise_var_ms2));
    // Bounded so that a persistent step (an outage, a new queue) moves the state, not the noise model.
    this.noise_var_ms2 = Math.min(25, Math.max(0.25, 0.99 * this.noise_var_ms2 + 0.01 * clipped * clipped));
    // Innovation variance S = H P Hᵀ + R.
    const ph0 = this.p00 * h0 + this.p01 * h1;
    const ph1 = this.p01 * h0 + this.p11 * h1;
    const s = h0 * ph0 + h1 * ph1 + this.noise_var_ms2;
    const k0 = ph0 / s; // Kalman gain K_g (Eq. 4)
    const k1 = ph1 / s;
    this.inv_capacity_ms_per_byte += k0 * residual_ms;
    this.qd_ms += k1 * residual_ms; // Eq. 4: Qd ← (1 − K_g)·Qd + K_g·D_c (for H = [0, 1])
    // P ← (I − K H) P, kept symmetric and non-negative.
    const n00 = this.p00 - k0 * ph0;
    const n01 = this.p01 - k0 * ph1;
    const n11 = this.p11 - k1 * ph1;
    this.p00 = Math.max(n00, 0);
    this.p01 = n01;
    this.p11 = Math.max(n11, 0);
    if (this.inv_capacity_ms_per_byte <= 0) this.inv_capacity_ms_per_byte = 1e-9;
    if (this.qd_ms < 0) this.qd_ms = 0;
    return this.qd_ms;
  }

  /** Forget confidence after an outage so the filter follows new data at once (it must not stay stuck). */
  reset(measured_qd_ms = 0): void {
    this.qd_ms = Math.max(0, measured_qd_ms);
    this.p00 = KALMAN_INITIAL_COVARIANCE[0];
    this.p01 = 0;
    this.p11 = KALMAN_INITIAL_COVARIANCE[1];
    this.noise_var_ms2 = INITIAL_NOISE_VAR_MS2;
  }

  /** The covariance P as [P00, P01, P11] ((ms/byte)², ms²/byte, ms²), for tests and logs. */
  get covariance(): readonly [number, number, number] {
    return [this.p00, this.p01, this.p11];
  }

  /** Filtered queuing delay, ms. */
  get queuingDelayMs(): number {
    return this.qd_ms;
  }

  /** Capacity implied by the 1/C state, bits per second (see the observability caveat above). */
  get capacityBps(): number {
    return (8 * 1000) / this.inv_capacity_ms_per_byte;
  }
}
