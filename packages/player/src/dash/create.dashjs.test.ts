// @vitest-environment happy-dom
/**
 * createNuwaPlayer with the real dash.js 5 module (under happy-dom: dash.js
 * imports and builds its MediaPlayer, but there is no MediaSource, so nothing
 * plays; playback is the e2e tests' job). Checks what the fakes in
 * create.test.ts cannot: the module shapes createNuwaPlayer accepts, the rule
 * registered through dash.js's own FactoryMaker, and the event names, which
 * are driven here through dash.js's own event bus.
 */
import * as dashjsNs from "dashjs";
import { describe, expect, it } from "vitest";
import { createNuwaPlayer, type NuwaPlayerEvents } from "./create.js";

const URL_ = "https://127.0.0.1:4433/nuwa";
const defaultExport = (dashjsNs as unknown as { default: typeof dashjsNs }).default;

describe("createNuwaPlayer with the real dash.js", () => {
  it.each([
    ["the ESM namespace", dashjsNs],
    ["the default export", defaultExport],
  ])("accepts %s; registers Nuwa's ABR rule and turns dash.js's throughput and BOLA rules off", (_label, mod) => {
    const p = createNuwaPlayer(document.createElement("video"), { dashjs: mod, url: URL_, mpd: "/manifest.mpd", estimate_interval_ms: 0 });
    p.session.catch(() => {});
    expect(p.player.getVersion()).toMatch(/^5\./);
    expect(p.player.getABRCustomRules().map((r: { type: string; rulename: string }) => [r.type, r.rulename])).toEqual([["qualitySwitchRules", "NuwaAbrRule"]]);
    const rules = p.player.getSettings().streaming?.abr?.rules;
    expect(rules?.throughputRule?.active).toBe(false);
    expect(rules?.bolaRule?.active).toBe(false);
    p.destroy(); // no MediaSource here: initialize never completed, destroy still cleans up
  });

  it("abandon: true registers the MPC's abandonment with the real dash.js and lifts its 10 s hold", () => {
    const p = createNuwaPlayer(document.createElement("video"), { dashjs: dashjsNs, abandon: true, url: URL_, mpd: "/manifest.mpd", estimate_interval_ms: 0 });
    p.session.catch(() => {});
    expect(p.player.getABRCustomRules().map((r: { type: string; rulename: string }) => [r.type, r.rulename])).toEqual([
      ["qualitySwitchRules", "NuwaAbrRule"],
      ["abandonFragmentRules", "NuwaAbandonRule"],
    ]);
    expect(p.player.getSettings().streaming?.abandonLoadTimeout).toBe(0);
    p.destroy();
  });

  it("leaves dash.js's rules in place with abr: dashjs", () => {
    const p = createNuwaPlayer(document.createElement("video"), { dashjs: dashjsNs, abr: "dashjs", url: URL_, mpd: "/manifest.mpd", estimate_interval_ms: 0 });
    p.session.catch(() => {});
    expect(p.player.getABRCustomRules()).toEqual([]);
    expect(p.player.getSettings().streaming?.abr?.rules?.throughputRule?.active).toBe(true);
    p.destroy();
  });

  it("listens to dash.js's real event names: startup, stall, bitrate, buffer through dash.js's event bus", () => {
    const p = createNuwaPlayer(document.createElement("video"), { dashjs: dashjsNs, url: URL_, mpd: "/manifest.mpd", estimate_interval_ms: 0 });
    p.session.catch(() => {});
    const got: [string, unknown][] = [];
    for (const t of ["startup", "stall", "bitrate", "buffer"] as const) p.on(t, (e) => got.push([t, e]));
    const ev = dashjsNs.MediaPlayer.events;
    const fire = (type: string, payload: object) => p.player.trigger(type as never, payload, {});
    fire(ev.PLAYBACK_PLAYING, { playingTime: 0 });
    fire(ev.PLAYBACK_WAITING, { playingTime: 1 });
    fire(ev.PLAYBACK_PLAYING, { playingTime: 1 });
    fire(ev.QUALITY_CHANGE_RENDERED, { mediaType: "video", newRepresentation: { bandwidth: 1_500_000 } });
    fire(ev.BUFFER_LEVEL_UPDATED, { mediaType: "audio", bufferLevel: 3.25 });
    expect(got.map(([t, e]) => (t === "stall" ? `stall:${(e as NuwaPlayerEvents["stall"]).state}` : t))).toEqual(["startup", "stall:start", "stall:end", "bitrate", "buffer"]);
    expect((got[3]![1] as NuwaPlayerEvents["bitrate"]).bitrate_bps).toBe(1_500_000);
    expect((got[4]![1] as NuwaPlayerEvents["buffer"]).level_s).toBe(3.25);
    p.destroy();
    fire(ev.PLAYBACK_WAITING, { playingTime: 2 }); // after destroy: unsubscribed
    expect(got).toHaveLength(5);
  });
});
