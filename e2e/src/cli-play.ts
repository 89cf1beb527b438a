/** `./nuwa play [--player dashjs|shaka] [--trace FILE] [--duration S] [--scheme SCHEME] [--out DIR] [--cc JSON]` (players and their schemes: PLAYERS in play.ts) */
import { parseCcJson, parseCli, usageError } from "./cli-args.js";
import { describePlay, PLAYERS, type PlayerName, type PlayOptions, runPlay } from "./play.js";

const USAGE = `./nuwa play [--player dashjs|shaka] [--trace FILE] [--duration S] [--scheme SCHEME] [--out DIR] [--cc JSON]
  play DASH video through Nuwa under a trace; prints a summary. Schemes (the video ladder,
  each one factor from the next):
    dashjs                dash.js 5.2.1 as shipped (default ABR, own estimate, no setting
                          changed; only the loader carries requests over the session) over
                          the server's cubic (old name: cubic)
    dashjs_grants         the same dash.js over Nuwa's grants
    dashjs_nuwa_estimate  dash.js's rules fed Nuwa's estimate, grants
    nuwa                  Nuwa ABR on Nuwa's estimate, grants (default)
    nuwa_cubic            Nuwa ABR on Nuwa's estimate over the server's cubic, no grants
                          (old name: observe)
  --player shaka (shaka-player 5 over the Nuwa scheme plugin; dash.js is the default):
    shaka                 shaka as shipped (its ABR and estimate; only the networking
                          replaced) over the server's cubic
    shaka_grants          the same shaka over Nuwa's grants
    shaka_nuwa            shaka's ABR on Nuwa's estimate, grants (default with shaka)`;
const values = parseCli(USAGE, {
  trace: { type: "string", default: "traces/4G/mahimahi-verizon-lte-short.mahi" },
  duration: { type: "string", default: "60" },
  player: { type: "string", default: "dashjs" },
  scheme: { type: "string" },
  out: { type: "string", default: "out/play" },
  cc: { type: "string", default: "{}" },
});
const cc = parseCcJson(USAGE, values.cc);
const player = values.player as PlayerName;
if (!Object.hasOwn(PLAYERS, player)) usageError(USAGE, `--player must be one of ${Object.keys(PLAYERS).join(", ")} (got ${player})`);
const scheme = (values.scheme ?? PLAYERS[player].default_scheme) as PlayOptions["scheme"];
if (!PLAYERS[player].schemes.includes(scheme)) {
  usageError(USAGE, `--scheme must be one of ${PLAYERS[player].schemes.join(", ")} with --player ${player} (got ${scheme})`);
}
const duration_s = Number(values.duration);
if (!(duration_s >= 10 && duration_s <= 110)) {
  usageError(USAGE, `--duration must be 10..110 s (the content is 120 s long; got ${values.duration})`);
}
const s = await runPlay({ trace: values.trace!, player, scheme, duration_s, out_dir: values.out!, cc });
console.log(describePlay(s, values.out!));
