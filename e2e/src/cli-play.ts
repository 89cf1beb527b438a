/** `./nuwa play [--player dashjs|hlsjs|shaka] [--content DIR] [--trace FILE] [--duration S] [--scheme SCHEME] [--out DIR] [--cc JSON] [--competitor cubic|reno|bbr] [--competitor-start-s S] [--switch none|rule [--switch-rule JSON]]` (schemes: PLAYER_SCHEMES in play.ts) */
import { parseCcJson, parseCli, usageError } from "./cli-args.js";
import { describePlay, findMpd, PLAYER_SCHEMES, PLAYERS, type PlayPlayer, type PlayScheme, runPlay } from "./play.js";

const USAGE = `./nuwa play [--player dashjs|hlsjs|shaka] [--content DIR] [--trace FILE] [--duration S] [--scheme SCHEME] [--out DIR] [--cc JSON]
  [--competitor cubic|reno|bbr [--competitor-start-s S (default 5)]] [--switch none|rule [--switch-rule JSON]]
  play DASH video through Nuwa under a trace; prints a summary. --content DIR plays your own
  DASH VOD (any packager's output: DIR/manifest.mpd or the one *.mpd in DIR; layouts and
  features in docs/CONTENT.md) instead of the generated ladder; playback stops at --duration
  or at the end of the media. Schemes (the video ladder,
  each one factor from the next):
    dashjs                dash.js 5.2.1 as shipped (default ABR, own estimate, no setting
                          changed; only the loader carries requests over the session) over
                          the server's cubic (old name: cubic)
    dashjs_grants         the same dash.js over Nuwa's grants
    dashjs_nuwa_estimate  dash.js's rules fed Nuwa's estimate (through dash.js's own
                          EWMA), grants
    nuwa                  Nuwa ABR on Nuwa's estimate, grants (default)
    nuwa_cubic            Nuwa ABR on Nuwa's estimate over the server's cubic, no grants
                          (old name: observe)
  --player hlsjs (hls.js 1.7, HLS playlists over the same segments), schemes:
    hlsjs                 hls.js as shipped (default ABR and estimate, no setting changed;
                          only the loader replaced) over the server's cubic, no grants
    hlsjs_nuwa_estimate   hls.js's rules fed Nuwa's estimate, grants
    hlsjs_nuwa            Nuwa's MPC on Nuwa's estimate in hls.js's AbrController, grants
                          (default for hlsjs)
    hlsjs_nuwa_perread    hlsjs_nuwa deciding on every read of the level, not once per
                          fragment (the behaviour before the fifty-fourth session)
  --player shaka (shaka-player 5 over the Nuwa scheme plugin, the DASH content), schemes:
    shaka                 shaka as shipped (its ABR and estimate; only the networking
                          replaced) over the server's cubic
    shaka_grants          the same shaka over Nuwa's grants
    shaka_nuwa            shaka's ABR on Nuwa's estimate, grants (default for shaka)
    shaka_nuwa_prefetch   shaka_nuwa with streaming.segmentPrefetchLimit 2 (two segments of each
                          stream fetched ahead in parallel)
  --competitor SCHEME: a bulk download over a second server with that controller through the
  same bottleneck, from --competitor-start-s after the page loads to the end (issue 18: the
  video next to a download); the summary adds each flow's goodput, the video's share and the
  video's own queuing delay. --switch rule: the Nuwa server's controller switching; --switch-rule
  JSON changes the rule's thresholds (the server's --switch-rule, fields of RuleConfig in
  server/nuwa_server/switch_policy.py), e.g. '{"probe_fail_min_samples": null}'.`;
const values = parseCli(USAGE, {
  trace: { type: "string", default: "traces/4G/mahimahi-verizon-lte-short.mahi" },
  duration: { type: "string", default: "60" },
  scheme: { type: "string" },
  player: { type: "string", default: "dashjs" },
  out: { type: "string", default: "out/play" },
  cc: { type: "string", default: "{}" },
  content: { type: "string" },
  competitor: { type: "string" },
  "competitor-start-s": { type: "string", default: "5" },
  switch: { type: "string", default: "none" },
  "switch-rule": { type: "string" },
});
const cc = parseCcJson(USAGE, values.cc);
const player = values.player as PlayPlayer;
if (!PLAYERS.includes(player)) usageError(USAGE, `--player must be one of ${PLAYERS.join(", ")} (got ${player})`);
const scheme = (values.scheme ?? PLAYER_SCHEMES[player].default) as PlayScheme;
if (!PLAYER_SCHEMES[player].schemes.includes(scheme)) {
  usageError(USAGE, `--scheme must be one of ${PLAYER_SCHEMES[player].schemes.join(", ")} for --player ${player} (got ${scheme})`);
}
const duration_s = Number(values.duration);
const content = values.content;
if (content !== undefined) {
  if (player === "hlsjs") usageError(USAGE, "--content is DASH content: use --player dashjs or shaka");
  try {
    findMpd(content);
  } catch (e) {
    usageError(USAGE, (e as Error).message);
  }
  if (!(duration_s >= 1 && duration_s <= 3600)) usageError(USAGE, `--duration must be 1..3600 s (got ${values.duration})`);
} else if (!(duration_s >= 10 && duration_s <= 110)) {
  usageError(USAGE, `--duration must be 10..110 s (the content is 120 s long; got ${values.duration})`);
}
const competitor = values.competitor as "cubic" | "reno" | "bbr" | undefined;
if (competitor !== undefined && !["cubic", "reno", "bbr"].includes(competitor)) usageError(USAGE, `--competitor must be one of cubic, reno, bbr (got ${competitor})`);
const competitor_start_s = Number(values["competitor-start-s"]);
if (!(competitor_start_s >= 0 && competitor_start_s < duration_s)) usageError(USAGE, `--competitor-start-s must be 0..the duration (got ${values["competitor-start-s"]})`);
const sw = values.switch as "none" | "rule";
if (!["none", "rule"].includes(sw)) usageError(USAGE, `--switch must be none or rule (got ${values.switch})`);
const switch_rule = values["switch-rule"];
if (switch_rule !== undefined) {
  if (sw === "none") usageError(USAGE, "--switch-rule needs --switch rule");
  let rule: unknown;
  try {
    rule = JSON.parse(switch_rule);
  } catch (e) {
    usageError(USAGE, `--switch-rule is not JSON: ${(e as Error).message}`);
  }
  if (typeof rule !== "object" || rule === null || Array.isArray(rule)) usageError(USAGE, `--switch-rule must be a JSON object (got ${switch_rule})`);
}
const s = await runPlay({ trace: values.trace!, scheme, player, duration_s, out_dir: values.out!, cc, content, competitor, competitor_start_s, switch: sw, switch_rule });
console.log(describePlay(s, values.out!));
