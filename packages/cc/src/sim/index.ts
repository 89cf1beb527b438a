/** Simulation helpers of @nuwa/cc: Mahimahi traces, a drop-tail trace link, a bulk-download simulation, the offline frontier. */
export { type BulkSimOptions, type BulkSimResult, percentile, simulateBulk } from "./bulk.js";
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
export { constantRateTrace, MAHIMAHI_PACKET_BYTES, parseMahimahiTrace, traceMeanBps } from "./trace.js";
