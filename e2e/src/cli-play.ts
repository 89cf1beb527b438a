/** `./nuwa play [--trace FILE] [--duration S] [--scheme nuwa|cubic|observe|dashjs_nuwa_estimate] [--out DIR]` */
import { parseCcJson, parseCli, usageError } from "./cli-args.js";
import { describePlay, type PlayScheme, runPlay } from "./play.js";

const USAGE = `./nuwa play [--trace FILE] [--duration S] [--scheme nuwa|cubic|observe|dashjs|dashjs_nuwa_estimate] [--out DIR] [--cc JSON]
  play DASH video through Nuwa under a trace; prints a summary`;
const values = parseCli(USAGE, {
  trace: { type: "string", default: "traces/4G/mahimahi-verizon-lte-short.mahi" },
  duration: { type: "string", default: "60" },
  scheme: { type: "string", default: "nuwa" },
  out: { type: "string", default: "out/play" },
  cc: { type: "string", default: "{}" },
});
const cc = parseCcJson(USAGE, values.cc);
const scheme = values.scheme as PlayScheme;
if (!["nuwa", "cubic", "observe", "dashjs", "dashjs_nuwa_estimate"].includes(scheme)) {
  usageError(USAGE, `--scheme must be nuwa, cubic, observe, dashjs or dashjs_nuwa_estimate (got ${scheme})`);
}
const duration_s = Number(values.duration);
if (!(duration_s >= 10 && duration_s <= 110)) {
  usageError(USAGE, `--duration must be 10..110 s (the content is 120 s long; got ${values.duration})`);
}
const s = await runPlay({ trace: values.trace!, scheme, duration_s, out_dir: values.out!, cc });
console.log(describePlay(s, values.out!));
