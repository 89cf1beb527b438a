/**
 * @nuwa/cc: the Nuwa receiver-driven congestion controller. Pure TypeScript,
 * no DOM, no I/O, no clock: every call takes the timestamps it needs.
 */
export { DEFAULT_CONFIG, type NuwaConfig, type QdSource, resolveConfig, type StepMode } from "./config.js";
export { type BandwidthEstimate, type Decision, NuwaController, type Phase } from "./controller.js";
export { QueuingDelayKalman } from "./kalman.js";
export { OneWayDelaySampler, type OwdSample } from "./owd.js";
export * from "./protocol.js";
export { DeliveryRateEstimator } from "./rate.js";
export { LinkWaitEstimator } from "./waits.js";
