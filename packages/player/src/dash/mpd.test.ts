// @vitest-environment happy-dom
/**
 * The MPD glue (mpd.ts, issue 19 item 2): hand-made MPDs using each feature the glue refuses
 * (DRM, live, a codec the browser lacks) give a NuwaContentError naming it; the segment-size
 * sources of SegmentList and SegmentBase content; a real sidx box from ffmpeg's output
 * (lab/nuwa_lab/dashgen/layouts.py `segmentbase`, rendition 1).
 */
import { describe, expect, it } from "vitest";
import { checkMpd, expandNumberTemplate, initSegmentPaths, MAX_INIT_SEGMENTS, NuwaContentError, nextSegmentPath, parseSidx, SegmentSizes, segmentIndexPlan, segmentTemplates } from "./mpd.js";

const mpd = (body: string, attrs = 'type="static"') =>
  `<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:cenc="urn:mpeg:cenc:2013" ${attrs} mediaPresentationDuration="PT8S"><Period id="0">${body}</Period></MPD>`;
const VIDEO = `<AdaptationSet contentType="video" mimeType="video/mp4"><Representation id="v0" codecs="avc1.42c00d" bandwidth="250000"><SegmentTemplate media="v-$Number$.m4s" initialization="v-init.m4s" duration="2" /></Representation></AdaptationSet>`;
const AUDIO = `<AdaptationSet contentType="audio" mimeType="audio/mp4"><Representation id="a0" codecs="mp4a.40.2" bandwidth="64000"><SegmentTemplate media="a-$Number$.m4s" initialization="a-init.m4s" duration="2" /></Representation></AdaptationSet>`;
const chromium = (t: string) => /avc1|mp4a/.test(t);

describe("checkMpd: unsupported features end in a named error", () => {
  it("accepts plain VOD", () => {
    expect(checkMpd(mpd(VIDEO + AUDIO), { isTypeSupported: chromium })).toBeNull();
  });

  it("DRM: any ContentProtection (here Widevine in the cenc namespace) → feature drm, scheme named", () => {
    const drm = mpd(VIDEO.replace("<Representation", '<ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cenc" cenc:default_KID="1-2"/><ContentProtection schemeIdUri="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"/><Representation') + AUDIO);
    const e = checkMpd(drm);
    expect(e).toBeInstanceOf(NuwaContentError);
    expect(e?.feature).toBe("drm");
    expect(e?.message).toMatch(/^unsupported content: DRM \(ContentProtection\): 2 ContentProtection element\(s\), scheme urn:mpeg:dash:mp4protection:2011, urn:uuid:edef8ba9/);
  });

  it('live: type="dynamic" → feature live', () => {
    const e = checkMpd(mpd(VIDEO, 'type="dynamic" availabilityStartTime="2026-01-01T00:00:00Z"'));
    expect(e?.feature).toBe("live");
    expect(e?.message).toContain('live content (MPD type="dynamic")');
  });

  it("codec: no video representation the browser decodes → feature codec, codecs listed; one decodable is enough", () => {
    const hevc = VIDEO.replace("avc1.42c00d", "hvc1.1.6.L93.B0");
    const e = checkMpd(mpd(hevc + AUDIO), { isTypeSupported: chromium });
    expect(e?.feature).toBe("codec");
    expect(e?.message).toContain('no video representation this browser decodes (video/mp4; codecs="hvc1.1.6.L93.B0")');
    const both = hevc.replace("</AdaptationSet>", '<Representation id="v1" codecs="avc1.42c01e" bandwidth="700000"/></AdaptationSet>');
    expect(checkMpd(mpd(both + AUDIO), { isTypeSupported: chromium })).toBeNull();
    expect(checkMpd(mpd(hevc + AUDIO))).toBeNull(); // no isTypeSupported: codecs not checked
    const ac4 = AUDIO.replace("mp4a.40.2", "ac-4.02.01.01");
    expect(checkMpd(mpd(VIDEO + ac4), { isTypeSupported: chromium })?.message).toContain("no audio representation");
  });

  it("not an MPD: no verdict (dash.js reports its own parse error)", () => {
    expect(checkMpd("<html>nope</html>")).toBeNull();
    expect(checkMpd("not xml <")).toBeNull();
  });
});

describe("segment sizes: SegmentList, SegmentBase and the sidx", () => {
  const list = mpd(
    `<AdaptationSet contentType="video" mimeType="video/mp4"><Representation id="0" codecs="avc1" bandwidth="250000"><BaseURL>manifest-stream0.mp4</BaseURL><SegmentList timescale="1000000" duration="2000000"><Initialization range="0-826"/><SegmentURL mediaRange="827-56089"/><SegmentURL mediaRange="56090-112370"/></SegmentList></Representation></AdaptationSet>` +
      `<AdaptationSet contentType="video" mimeType="video/mp4"><BaseURL>media/</BaseURL><Representation id="1" codecs="avc1" bandwidth="700000"><BaseURL>manifest-stream1.mp4</BaseURL><SegmentBase indexRange="833-920"><Initialization range="0-832"/></SegmentBase></Representation></AdaptationSet>` +
      VIDEO,
  );

  it("SegmentList: sizes from mediaRange; SegmentBase: the sidx range to fetch, BaseURLs resolved; SegmentTemplate: nothing", () => {
    const plan = segmentIndexPlan(list, "https://h:1/content/manifest.mpd");
    expect(plan).toEqual([
      {
        rep_id: "0",
        content_type: "video",
        sizes: [
          { start_s: 0, duration_s: 2, bytes: 56089 - 827 + 1 },
          { start_s: 2, duration_s: 2, bytes: 112370 - 56090 + 1 },
        ],
        sidx: null,
      },
      { rep_id: "1", content_type: "video", sizes: null, sidx: { url: "https://h:1/content/media/manifest-stream1.mp4", range: [833, 920] } },
    ]);
  });

  // ffmpeg 5.1 `-single_file 1 -global_sidx 1`, 640x360 rendition: a version-1 sidx, 4 references of 2 s.
  const SIDX_HEX =
    "000000587369647801000000000000010000300000000000000000000000000000000000000000040002ee9500006000800000000002e032000060008000000000029efc00006000800000000002be970000600080000000";
  const sidx = Uint8Array.from(SIDX_HEX.match(/../g)!.map((h) => Number.parseInt(h, 16)));

  it("parseSidx reads referenced sizes and durations (timescale 12288), also after other boxes", () => {
    const want = [192149, 188466, 171772, 179863].map((bytes, i) => ({ start_s: 2 * i, duration_s: 2, bytes }));
    expect(parseSidx(sidx)).toEqual(want);
    const free = Uint8Array.from([0, 0, 0, 12, 0x66, 0x72, 0x65, 0x65, 1, 2, 3, 4]); // a 12-byte 'free' box first
    expect(parseSidx(Uint8Array.from([...free, ...sidx]))).toEqual(want);
    expect(() => parseSidx(sidx.slice(0, 60))).toThrow(/no complete sidx/);
  });

  it("SegmentSizes: mean bytes of the next n segments from a media time; null when unknown", () => {
    const s = new SegmentSizes();
    s.set("1", parseSidx(sidx));
    expect(s.upcomingBytes("1", 0, 2)).toBe((192149 + 188466) / 2);
    expect(s.upcomingBytes("1", 4.01, 5)).toBe((171772 + 179863) / 2); // from the segment starting at 4 s
    expect(s.upcomingBytes("1", 9, 2)).toBeNull();
    expect(s.upcomingBytes("0", 0, 2)).toBeNull();
  });
});

describe("segmentTemplates / nextSegmentPath (the loader's fetch-ahead)", () => {
  const GEN = `<AdaptationSet contentType="video" mimeType="video/mp4"><Representation id="3" codecs="avc1.64001e" bandwidth="1850000"><SegmentTemplate timescale="1000000" duration="2000000" initialization="init-$RepresentationID$.m4s" media="seg-$RepresentationID$-$Number%05d$.m4s" startNumber="1" /></Representation></AdaptationSet>`;
  it("the generated content's template: the segment after the one at a start, checked against its path", () => {
    const [t] = segmentTemplates(mpd(GEN), "https://h:1/content/manifest.mpd");
    expect(t).toMatchObject({ rep_id: "3", start_number: 1, segment_s: 2, bandwidth_bps: 1850000 });
    expect(nextSegmentPath(t!, "/content/seg-3-00004.m4s", 6)).toBe("/content/seg-3-00005.m4s");
    expect(nextSegmentPath(t!, "/content/seg-3-00004.m4s", 8)).toBeNull(); // the start names another segment: nothing guessed
    expect(nextSegmentPath(t!, "/content/seg-3-00004.m4s", Number.NaN)).toBeNull();
  });
  it("AdaptationSet-level templates, startNumber 0 and $Bandwidth$; $Time$ and SegmentTimeline are left out", () => {
    const as = `<AdaptationSet contentType="audio" mimeType="audio/mp4"><SegmentTemplate media="a/$Bandwidth$/$Number$.m4s" duration="4" startNumber="0" /><Representation id="a0" bandwidth="64000" /></AdaptationSet>`;
    const time = `<AdaptationSet contentType="video"><Representation id="t" bandwidth="1"><SegmentTemplate media="v-$Time$.m4s" duration="2" /></Representation></AdaptationSet>`;
    const tl = `<AdaptationSet contentType="video"><Representation id="l" bandwidth="1"><SegmentTemplate media="v-$Number$.m4s"><SegmentTimeline><S t="0" d="2" r="3" /></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet>`;
    const ts = segmentTemplates(mpd(as + time + tl + VIDEO), "https://h:1/c/m.mpd");
    expect(ts.map((t) => t.rep_id)).toEqual(["a0", "v0"]);
    expect(nextSegmentPath(ts[0]!, "/c/a/64000/2.m4s", 8)).toBe("/c/a/64000/3.m4s");
    expect(nextSegmentPath(ts[1]!, "/c/v-1.m4s", 0)).toBe("/c/v-2.m4s");
  });
  it("expandNumberTemplate: $$, widths, and null for an identifier it does not expand", () => {
    expect(expandNumberTemplate("x$$-$RepresentationID$-$Number%03d$-$Bandwidth$", "r", 5, 7)).toBe("x$-r-007-5");
    expect(expandNumberTemplate("v-$SubNumber$.m4s", "r", 5, 7)).toBeNull();
  });
});

describe("initSegmentPaths (the loader's init-segment prefetch)", () => {
  it("every representation's init: templates expanded per representation, BaseURLs resolved, whole-file Initialization only", () => {
    const ladder = `<AdaptationSet contentType="video" mimeType="video/mp4"><BaseURL>v/</BaseURL><SegmentTemplate media="seg-$RepresentationID$-$Number$.m4s" initialization="init-$RepresentationID$-$Bandwidth$.m4s" duration="2" /><Representation id="0" bandwidth="300000"/><Representation id="1" bandwidth="750000"/><Representation id="0" bandwidth="300000"/></AdaptationSet>`;
    const base = `<AdaptationSet contentType="audio" mimeType="audio/mp4"><Representation id="a"><SegmentBase indexRange="800-900"><Initialization sourceURL="a-init.mp4"/></SegmentBase></Representation><Representation id="b"><SegmentBase indexRange="800-900"><Initialization range="0-799"/></SegmentBase></Representation></AdaptationSet>`;
    const numbered = `<AdaptationSet contentType="text"><Representation id="t"><SegmentTemplate media="t-$Number$.vtt" initialization="t-$Number$-init.mp4" duration="2"/></Representation></AdaptationSet>`;
    expect(initSegmentPaths(mpd(ladder + base + numbered), "https://h:1/c/manifest.mpd")).toEqual(["/c/v/init-0-300000.m4s", "/c/v/init-1-750000.m4s", "/c/a-init.mp4"]);
    expect(initSegmentPaths(mpd(VIDEO + AUDIO), "https://h:1/manifest.mpd")).toEqual(["/v-init.m4s", "/a-init.m4s"]);
  });

  it("not an MPD: none; a ladder longer than MAX_INIT_SEGMENTS: the first MAX_INIT_SEGMENTS", () => {
    expect(initSegmentPaths("<html/>", "https://h:1/m.mpd")).toEqual([]);
    const reps = Array.from({ length: MAX_INIT_SEGMENTS + 5 }, (_, i) => `<Representation id="r${i}" bandwidth="1000"/>`).join("");
    const paths = initSegmentPaths(mpd(`<AdaptationSet><SegmentTemplate media="$RepresentationID$-$Number$.m4s" initialization="$RepresentationID$-init.m4s" duration="2"/>${reps}</AdaptationSet>`), "https://h:1/m.mpd");
    expect(paths).toHaveLength(MAX_INIT_SEGMENTS);
    expect(paths[0]).toBe("/r0-init.m4s");
  });
});

describe("initSegmentPaths: inherited segment information", () => {
  it("an initialization named only on the AdaptationSet's or the Period's SegmentTemplate is found; the nearest level wins", () => {
    const period = `<SegmentTemplate initialization="p-$RepresentationID$-init.m4s"/><AdaptationSet><Representation id="x"><SegmentTemplate media="x-$Number$.m4s" duration="2"/></Representation></AdaptationSet>`;
    expect(initSegmentPaths(mpd(period), "https://h:1/m.mpd")).toEqual(["/p-x-init.m4s"]);
    const both = `<AdaptationSet><SegmentTemplate initialization="as-$RepresentationID$.m4s"/><Representation id="y"><SegmentTemplate media="y-$Number$.m4s" duration="2" initialization="own-$RepresentationID$.m4s"/></Representation><Representation id="z"><SegmentTemplate media="z-$Number$.m4s" duration="2"/></Representation></AdaptationSet>`;
    expect(initSegmentPaths(mpd(both), "https://h:1/m.mpd")).toEqual(["/own-y.m4s", "/as-z.m4s"]);
  });
});
