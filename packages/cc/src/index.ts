/**
 * @nuwa/cc: the Nuwa receiver-driven congestion controller. Pure TypeScript,
 * no DOM, no I/O, no clock: every call takes the timestamps it needs.
 */
export { DEFAULT_CONFIG, resolveConfig, type NuwaConfig, type QdSource, type StepMode } from "./config.js";
export { NuwaController, type BandwidthEstimate, type Decision, type Phase } from "./controller.js";
export { QueuingDelayKalman } from "./kalman.js";
export { OneWayDelaySampler, type OwdSample } from "./owd.js";
export { DeliveryRateEstimator } from "./rate.js";
export * from "./protocol.js";
