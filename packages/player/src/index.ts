/** @nuwa/player: the Nuwa receiver in the browser (WebTransport session, grants, bulk download). */

export {
  ABANDON_MIN_ELAPSED_MS,
  type AbrDecision,
  abrSafetyFactor,
  achievableKbps,
  chooseBitrateKbps,
  decideMpc,
  type FragmentRequestLike,
  makeNuwaAbandonRule,
  makeNuwaAbrRule,
  makeThroughputOverride,
  type NuwaMpcOptions,
  recentRateKbps,
} from "./dash/abr.js";
export { type AttachOptions, attachNuwa, type ContentErrorEvent, FETCH_AHEAD_STANDING_WAIT_S, type FetchAheadTelemetry, type NuwaAttachment, type Preset, TD_PRESETS_MS } from "./dash/attach.js";
export {
  createNuwaPlayer,
  type DashjsModuleLike,
  type MediaPlayerOf,
  NUWA_PLAYER_EVENT_TYPES,
  type NuwaPlayer,
  type NuwaPlayerEvents,
  type NuwaPlayerEventType,
  type NuwaPlayerOptions,
} from "./dash/create.js";
export { cmcdOf, DEFAULT_LOADER_OPTIONS, failureStatus, type LoadedRequest, type LoaderOptions, makeNuwaLoader, OPEN_RANGE_LAST, parseRangeHeader } from "./dash/loader.js";
export {
  type AbandonDecision,
  type AbandonInput,
  bruteForcePlan,
  MPC_DEFAULTS,
  MPC_REBUFFER_PENALTY,
  MpcHistory,
  type MpcInput,
  type MpcPlan,
  mpcAbandon,
  mpcPlan,
  mpcStep,
  robustThroughputKbps,
  type SegmentSample,
} from "./dash/mpc.js";
export { checkMpd, initSegmentPaths, MAX_INIT_SEGMENTS, type MpdCheckOptions, NuwaContentError, parseSidx, type RepresentationIndex, type SegmentSize, SegmentSizes, segmentIndexPlan, type UnsupportedFeature } from "./dash/mpd.js";
export { attachRlTuner, RL_CC, type RlTuning } from "./dash/rl.js";
export { TypedEmitter, type Unsubscribe } from "./emitter.js";
export { DEFAULT_GRANT_POLICY, GrantPolicy, type GrantPolicyConfig } from "./grants.js";
export { backoffDelayMs, DEFAULT_RECONNECT_POLICY, type ReconnectPolicy, resolveReconnectPolicy, SessionManager } from "./reconnect.js";
export {
  chooseTransport,
  DEFAULT_STALL_TIMEOUT_MS,
  type NuwaRequest,
  NuwaRequestError,
  type NuwaResponse,
  NuwaSession,
  type RequestErrorKind,
  type RequestOptions,
  type ResponseHead,
  type SessionMode,
  type SessionOptions,
  type TelemetryEvent,
  type TransportKind,
} from "./session.js";
export {
  checkMetadata,
  type KTarget,
  type OrtLike,
  type RlModelMetadata,
  RlTuner,
  type RlTunerOptions,
  TUNER_FEATURES,
  type TunerEvent,
  type TunerInput,
  type TunerState,
  tunerFeatures,
} from "./tuner.js";
