/**
 * Consumer of the packed `@nuwa/player/hls` subpath, run with plain Node (no DOM, no hls.js
 * import: the site passes its Hls class) by e2e/pack.e2e.test.ts. Prints one JSON object.
 */
import * as hlsEntry from "@nuwa/player/hls";

/** A stand-in for the Hls class: records its config. */
class FakeHls {
  static DefaultConfig = { abrController: class DefaultAbr {} };
  constructor(config) {
    this.config = config;
  }
}
const out = { exports: Object.keys(hlsEntry).sort() };
const base = hlsEntry.attachNuwaToHls(FakeHls, { url: "https://127.0.0.1:4433/nuwa", abr: "hlsjs", estimate: "hlsjs" });
const ours = hlsEntry.attachNuwaToHls(FakeHls, { url: "https://127.0.0.1:4433/nuwa" });
const made = ours.create({ maxBufferLength: 12 });
out.baseline_config = Object.keys(base.config).sort();
out.nuwa_config = Object.keys(ours.config).sort();
out.created_config = Object.keys(made.config).sort();
out.abr_extends_default = ours.config.abrController.prototype instanceof FakeHls.DefaultConfig.abrController;
out.session_rejected = await ours.session.then(
  () => false,
  () => true,
);
base.session.catch(() => {});
base.close();
ours.close();
try {
  hlsEntry.attachNuwaToHls(FakeHls, { url: "https://127.0.0.1:4433/nuwa", abr: "bola" });
  out.bad_abr = null;
} catch (e) {
  out.bad_abr = `${e.name}: ${e.message}`;
}
console.log(JSON.stringify(out));
