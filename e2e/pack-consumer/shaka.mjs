/**
 * Consumer of the packed `@nuwa/player/shaka` entry, run with plain Node (no
 * DOM, no shaka-player import: the site passes its shaka namespace in), by
 * e2e/pack.e2e.test.ts. Prints one JSON object on stdout.
 */
import * as main from "@nuwa/player";
import * as shakaEntry from "@nuwa/player/shaka";

const out = { exports: Object.keys(shakaEntry).sort(), main_has_shaka: Object.keys(main).some((k) => /shaka/i.test(k)) };
out.session_path = shakaEntry.sessionPath("https://127.0.0.1:4433/v/seg-1.m4s", "https://127.0.0.1:4433");
try {
  shakaEntry.attachNuwaShaka({ configure() {}, getStats: () => ({ estimatedBandwidth: 0 }) }, {}, { url: "http://127.0.0.1:4433/nuwa" });
  out.http_url_error = null;
} catch (e) {
  out.http_url_error = `${e.name}: ${e.message}`;
}
console.log(JSON.stringify(out));
