/** @nuwa/player: the Nuwa receiver in the browser (WebTransport session, grants, bulk download). */
export { DEFAULT_GRANT_POLICY, GrantPolicy, type GrantPolicyConfig } from "./grants.js";
export {
  type NuwaRequest,
  NuwaRequestError,
  type NuwaResponse,
  NuwaSession,
  type RequestOptions,
  type ResponseHead,
  type SessionMode,
  type SessionOptions,
  type TelemetryEvent,
} from "./session.js";
