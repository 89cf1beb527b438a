/**
 * `@nuwa/player/shaka`: shaka-player over a Nuwa session (issue 19 item 4). The
 * site passes its own `shaka` namespace; this entry never imports shaka-player,
 * so dash.js users do not get it.
 */
export { makeNuwaAbrFactory, type NuwaAbrManager, nuwaShakaEstimateBps } from "./abr.js";
export { attachNuwaShaka, type ShakaAttachment, type ShakaAttachOptions } from "./attach.js";
export { makeNuwaScheme, type NuwaSchemeOptions, type SchemeCompletion, type ShakaSchemeDeps, sessionPath } from "./scheme.js";
export type { NuwaSchemePlugin, ProgressUpdated, ShakaAbrManagerLike, ShakaErrorClassLike, ShakaLike, ShakaOperationLike, ShakaPlayerLike, ShakaRequestLike, ShakaResponseLike } from "./types.js";
