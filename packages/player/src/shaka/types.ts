/**
 * The slices of shaka-player 5's namespace that the shaka adapter uses, typed
 * structurally so `@nuwa/player/shaka` never imports shaka-player: the site passes
 * its own `shaka` namespace in (`import shaka from "shaka-player"`), and the real
 * typings are assignable to these (checked by e2e/pack-consumer/shaka-consumer.ts).
 * Source: shaka-player 5.2 externs (shaka.extern.SchemePlugin, Request, Response,
 * AbrManager) and lib/net/networking_engine.js.
 */

/** shaka.extern.Request, the fields the scheme plugin reads. */
export interface ShakaRequestLike {
  uris: string[];
  method: string;
  headers: Record<string, string>;
  /** `timeout`: ms for the whole request, 0 = none (shaka's retryParameters). */
  retryParameters: { timeout: number };
  /** The stream type of a segment request ("video", "audio"), set by shaka's StreamingEngine. */
  contentType?: string | null;
}

/** shaka.extern.Response, as the plugin resolves it. */
export interface ShakaResponseLike {
  uri: string;
  originalUri: string;
  data: ArrayBuffer;
  status: number;
  headers: Record<string, string>;
  fromCache: boolean;
  originalRequest: ShakaRequestLike;
}

/** shaka.extern.ProgressUpdated: (ms since the previous call, bytes since it, bytes still to come). */
export type ProgressUpdated = (duration_ms: number, bytes: number, remaining_bytes: number) => unknown;

/** shaka.util.AbortableOperation as a plugin returns it. */
export interface ShakaOperationLike {
  promise: Promise<unknown>;
  abort(): unknown;
}

/** The plugin signature of shaka.net.NetworkingEngine.registerScheme (shaka.extern.SchemePlugin). */
export type NuwaSchemePlugin = (
  uri: string,
  request: ShakaRequestLike,
  request_type: number,
  progressUpdated: ProgressUpdated,
  headersReceived: (headers: Record<string, string>) => unknown,
  config?: { minBytesForProgressEvents?: number },
) => ShakaOperationLike;

/** shaka.util.Error's constructor and enums (numbers). */
export interface ShakaErrorClassLike {
  new (severity: number, category: number, code: number, ...data: unknown[]): Error;
  Severity: { RECOVERABLE: number; CRITICAL: number };
  Category: { NETWORK: number };
  Code: { BAD_HTTP_STATUS: number; HTTP_ERROR: number; TIMEOUT: number; OPERATION_ABORTED: number };
}

/** shaka.extern.AbrManager, the methods the Nuwa AbrManager overrides or calls. */
export interface ShakaAbrManagerLike {
  getBandwidthEstimate(): number;
  segmentDownloaded(delta_ms: number, bytes: number, allow_switch: boolean, ...rest: never[]): unknown;
}

/** The parts of the `shaka` namespace the adapter uses. */
export interface ShakaLike {
  net: {
    NetworkingEngine: {
      registerScheme(scheme: string, plugin: NuwaSchemePlugin, priority?: number, progressSupport?: boolean): void;
      unregisterScheme(scheme: string): void;
      PluginPriority: { APPLICATION: number; PREFERRED: number };
      RequestType: { SEGMENT: number };
    };
    /** shaka's fetch plugin: other origins' requests, and https's plugin again when the attachment closes (a method, so shaka's own Request type is accepted). */
    HttpFetchPlugin?: { parse(...args: Parameters<NuwaSchemePlugin>): ShakaOperationLike };
  };
  util: {
    AbortableOperation: new (promise: Promise<ShakaResponseLike>, onAbort: () => Promise<unknown>) => ShakaOperationLike;
    Error: ShakaErrorClassLike;
  };
  abr: { SimpleAbrManager: new () => ShakaAbrManagerLike };
}

/** The parts of a shaka.Player the attachment uses. */
export interface ShakaPlayerLike {
  configure(config: object): unknown;
  getStats(): { estimatedBandwidth: number };
}
