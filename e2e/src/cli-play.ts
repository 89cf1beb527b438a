/** `./nuwa play [--trace FILE] [--duration S] [--scheme nuwa|cubic|observe|dashjs_nuwa_estimate] [--out DIR]` */
import { parseArgs } from "node:util";
import { describePlay, type PlayScheme, runPlay } from "./play.js";

const { values } = parseArgs({
  options: {
    trace: { type: "string", default: "traces/4G/mahimahi-verizon-lte-short.mahi" },
    duration: { type: "string", default: "60" },
    scheme: { type: "string", default: "nuwa" },
    out: { type: "string", default: "out/play" },
    cc: { type: "string", default: "{}" },
  },
});
const scheme = values.scheme as PlayScheme;
if (!["nuwa", "cubic", "observe", "dashjs", "dashjs_nuwa_estimate"].includes(scheme)) {
  console.error(`--scheme must be nuwa, cubic, observe or dashjs_nuwa_estimate (got ${scheme})`);
  process.exit(2);
}
const duration_s = Number(values.duration);
if (!(duration_s >= 10 && duration_s <= 110)) {
  console.error(`--duration must be 10..110 s (the content is 120 s long; got ${values.duration})`);
  process.exit(2);
}
const s = await runPlay({ trace: values.trace!, scheme, duration_s, out_dir: values.out!, cc: JSON.parse(values.cc!) });
console.log(describePlay(s, values.out!));
