/** Types of scenario.mjs (see there). */
export interface ScenarioResult {
  decisions: ({ i: number } & Record<string, unknown>)[];
  eq1_max_abs_error_ms: number;
  window_bytes: number;
  min_window_bytes: number;
  max_window_bytes: number;
  estimate_bps: number;
  estimate_basis: string;
  bulk: { utilization: number; queuing_delay_ms: { mean: number; p50: number; p95: number }; loss_rate: number; delivered_bytes: number; capacity_bytes: number; samples: number; samples_sum: number };
}
export function imposedQueueUs(i: number): number;
export function runScenario(cc: unknown, sim: unknown): ScenarioResult;
