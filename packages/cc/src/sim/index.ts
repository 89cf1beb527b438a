/** The simulator of @nuwa/cc: Mahimahi traces, the drop-tail trace link, the one engine (engine.ts) and its drivers (bulk, shared bottleneck, RL stepper, benchmark, offline frontier). */
export { type BenchSimOptions, type BenchSimResult, simulateBench } from "./bench-sim.js";
export { type BulkSimOptions, type BulkSimResult, percentile, simulateBulk } from "./bulk.js";
export { Engine, type PathOptions, type ReadHook } from "./engine.js";
export type { FlowOptions, SenderPolicy } from "./flow.js";
export {
  FRONTIER_HEADROOMS_MS,
  type FrontierOptions,
  type FrontierPoint,
  frontierEnvelope,
  frontierP95AtUtilization,
  frontierPoints,
  omniscientWindowPoint,
} from "./frontier.js";
export { type Departure, type LinkPacket, TraceLink } from "./link.js";
export { jainIndex, type SharedFlowSpec, type SharedSimOptions, type SharedSimResult, simulateShared } from "./shared.js";
export { BulkStepper, type IntervalStats, rotateTrace, type StepperOptions } from "./stepper.js";
export { burstVariant, constantRateTrace, MAHIMAHI_PACKET_BYTES, parseMahimahiTrace, traceMeanBps } from "./trace.js";
