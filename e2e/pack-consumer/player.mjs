/**
 * Consumer of the packed @nuwa/player, run with plain Node (no DOM shim, no
 * WebTransport, no dash.js import) in an empty project (e2e/pack.e2e.test.ts).
 * @nuwa/player never imports dash.js itself (it is passed in), so importing
 * it works outside a browser. Prints one JSON object on stdout.
 */
import * as player from "@nuwa/player";

const out = { exports: Object.keys(player).sort(), has_navigator: typeof globalThis.navigator !== "undefined", has_webtransport: typeof globalThis.WebTransport !== "undefined" };

out.range = player.parseRangeHeader("bytes=100-199");
out.grant_due_at_start = new player.GrantPolicy().due(0, 12_000);
out.td_presets_ms = player.TD_PRESETS_MS;

// Option errors are TypeErrors thrown before anything touches a browser API.
const errors = [];
for (const [label, video, opts] of [
  ["no dashjs", {}, { dashjs: {}, url: "https://127.0.0.1:4433/nuwa", mpd: "/m.mpd" }],
  ["http url", {}, { dashjs: {}, url: "http://127.0.0.1:4433/nuwa", mpd: "/m.mpd" }],
  ["no video", null, { dashjs: {}, url: "https://127.0.0.1:4433/nuwa", mpd: "/m.mpd" }],
]) {
  try {
    player.createNuwaPlayer(video, opts);
    errors.push([label, null]);
  } catch (e) {
    errors.push([label, `${e.name}: ${e.message}`]);
  }
}
out.option_errors = errors;

// The typed events through a minimal dash.js stand-in: the dash.js event becomes
// a NuwaPlayer event, and the session, which cannot open without WebTransport,
// becomes an `error` event.
const listeners = new Map();
const calls = [];
const fakePlayer = {
  on: (t, l) => listeners.set(t, l),
  off: (t) => listeners.delete(t),
  initialize: (...a) => calls.push(["initialize", a[1], a[2]]),
  reset: () => calls.push(["reset"]),
  extend: (name) => calls.push(["extend", name]),
  addABRCustomRule: (type, name) => calls.push(["addABRCustomRule", type, name]),
  updateSettings: () => calls.push(["updateSettings"]),
  getDashMetrics: () => ({ getCurrentBufferLevel: () => 0 }),
};
const fakeDashjs = {
  MediaPlayer: Object.assign(() => ({ create: () => fakePlayer }), { events: { PLAYBACK_PLAYING: "playbackPlaying", BUFFER_LEVEL_UPDATED: "bufferLevelUpdated" } }),
  FactoryMaker: { getClassFactory: (f) => f, getClassFactoryByName: () => () => ({ create: () => ({}) }) },
};
const p = player.createNuwaPlayer({}, { dashjs: fakeDashjs, url: "https://127.0.0.1:4433/nuwa", mpd: "/manifest.mpd" });
const events = [];
p.on("startup", (e) => events.push(["startup", e.startup_ms >= 0]));
p.on("buffer", (e) => events.push(["buffer", e.media_type, e.level_s]));
p.on("error", (e) => events.push(["error", e.source, e.message]));
listeners.get("playbackPlaying")({});
listeners.get("bufferLevelUpdated")({ mediaType: "video", bufferLevel: 4.5 });
out.session_rejected = await p.session.then(
  () => false,
  () => true,
);
await new Promise((r) => setTimeout(r, 0));
p.destroy();
out.events = events;
out.calls = calls;
out.listeners_after_destroy = listeners.size;
console.log(JSON.stringify(out));
