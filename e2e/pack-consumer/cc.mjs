/**
 * Consumer of the packed @nuwa/cc, run with plain Node in an empty project
 * (e2e/pack.e2e.test.ts). Prints one JSON object on stdout.
 */
import * as cc from "@nuwa/cc";
import * as sim from "@nuwa/cc/sim";
import { runScenario } from "./scenario.mjs";

const out = { exports: Object.keys(cc).sort(), sim_exports: Object.keys(sim).sort(), scenario: runScenario(cc, sim) };

// Bad input is a clear RangeError from the published build too.
try {
  new cc.NuwaController({ target_delay_ms: -1 });
  out.bad_config_error = null;
} catch (e) {
  out.bad_config_error = `${e.name}: ${e.message}`;
}
try {
  new cc.NuwaController().onFrame(Number.NaN, 0, 1200);
  out.bad_frame_error = null;
} catch (e) {
  out.bad_frame_error = `${e.name}: ${e.message}`;
}

// A grant round-trips through the published codec (PROTOCOL.md "Grants").
const grant = { grant_seq: 7, receiver_time_us: 123_456, cum_received_bytes: 2 ** 40, window_bytes: 65_536, echo_send_time_us: 99, echo_hold_us: 5 };
out.grant_roundtrip = cc.decodeGrant(cc.encodeGrant(grant));
out.grant_bytes = cc.encodeGrant(grant).length;

// Only the exported entry points resolve: dist internals are not part of the API.
try {
  await import("@nuwa/cc/dist/controller.js");
  out.deep_import_error = null;
} catch (e) {
  out.deep_import_error = e.code ?? String(e);
}

console.log(JSON.stringify(out));
