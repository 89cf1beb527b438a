/**
 * `@nuwa/player/hls`: Nuwa for hls.js 1.x (issue 19 item 3). The site passes its own Hls
 * class; nothing here imports hls.js, so dash.js users never load it.
 */
export { bufferAheadS, type HlsBwEstimatorLike, type HlsInstanceLike, makeNuwaHlsAbr, type NuwaHlsAbr, type NuwaHlsAbrOptions, wrapEstimator } from "./abr.js";
export { attachNuwaToHls, HLS_RETRY_TAKEOVER_MS, type HlsAttachOptions, type HlsClassLike, type NuwaHlsAttachment } from "./attach.js";
export {
  DEFAULT_HLS_LOADER_OPTIONS,
  type HlsFragLike,
  type HlsLoadedFragment,
  type HlsLoaderCallbacks,
  type HlsLoaderConfiguration,
  type HlsLoaderContext,
  type HlsLoaderOptions,
  type HlsLoaderStats,
  makeNuwaHlsLoader,
  type NuwaHlsLoader,
  type NuwaHlsLoaderClass,
  newLoadStats,
} from "./loader.js";
