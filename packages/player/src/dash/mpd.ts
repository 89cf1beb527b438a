/**
 * What the player glue reads in an MPD before dash.js plays it (issue 19 item 2):
 * - `checkMpd`: content using a feature Nuwa's player glue does not support ends at once in a
 *   `NuwaContentError` that names the feature (DRM, live, a codec the browser lacks), instead
 *   of dash.js waiting for a licence, a live edge or a decoder that never comes;
 * - `segmentIndexPlan`: where the real segment sizes of each representation are: in the MPD
 *   itself (SegmentList `mediaRange`) or in a sidx box (SegmentBase `indexRange`), which the
 *   glue then fetches over the session (`parseSidx`) so the MPC plans with real sizes;
 * - `segmentTemplates` / `nextSegmentPath`: the URL of the segment after a given one for
 *   SegmentTemplate content numbered by `$Number$`, for the loader's fetch-ahead (loader.ts).
 * Supported and unsupported MPD features: docs/CONTENT.md.
 */

/** A feature of the content that the player glue refuses, with a name a person can read. */
export type UnsupportedFeature = "drm" | "live" | "codec";

const FEATURE_NAMES: Record<UnsupportedFeature, string> = {
  drm: "DRM (ContentProtection)",
  live: 'live content (MPD type="dynamic")',
  codec: "a codec this browser cannot decode",
};

/** Content Nuwa's player cannot play: `feature` names what, `message` says where. */
export class NuwaContentError extends Error {
  override readonly name = "NuwaContentError";
  constructor(
    readonly feature: UnsupportedFeature,
    readonly detail: string,
  ) {
    super(`unsupported content: ${FEATURE_NAMES[feature]}: ${detail}`);
  }
}

export interface MpdCheckOptions {
  /**
   * Whether the browser can decode `mime; codecs="…"` (the page's `MediaSource.isTypeSupported`);
   * absent: codecs are not checked.
   */
  isTypeSupported?: (type: string) => boolean;
}

/** Every element of `doc` with this local name (any namespace or prefix). */
function elements(root: Document | Element, local: string): Element[] {
  return Array.from(root.getElementsByTagName("*")).filter((e) => e.localName === local);
}

/** Direct children of `el` with this local name. */
function children(el: Element, local: string): Element[] {
  return Array.from(el.children).filter((e) => e.localName === local);
}

/** Parse MPD text; null when it is not XML with an MPD root (dash.js then reports it itself). */
export function parseMpdXml(text: string): Document | null {
  const P = (globalThis as { DOMParser?: typeof DOMParser }).DOMParser;
  if (!P) return null;
  let doc: Document;
  try {
    doc = new P().parseFromString(text, "application/xml");
  } catch {
    return null;
  }
  const root = doc.documentElement;
  if (root?.localName !== "MPD" || elements(doc, "parsererror").length > 0) return null;
  return doc;
}

/**
 * Check an MPD for features the player glue does not support (pure but for DOMParser).
 * Rules, in this order: `MPD@type="dynamic"` → `live`; any `ContentProtection` → `drm`; with
 * `isTypeSupported`, a media type (video or audio) none of whose representations the browser
 * can decode → `codec` (one decodable representation is enough: dash.js filters the others).
 * @param text the MPD as received
 * @returns the error to raise, or null when the MPD is fine (or not parseable: dash.js reports that)
 */
export function checkMpd(text: string, o: MpdCheckOptions = {}): NuwaContentError | null {
  const doc = parseMpdXml(text);
  if (!doc) return null;
  const mpd = doc.documentElement;
  if ((mpd.getAttribute("type") ?? "static") === "dynamic") {
    return new NuwaContentError("live", "dash.js would play it, but Nuwa's glue serves VOD only (no live edge, no MPD updates)");
  }
  const cp = elements(doc, "ContentProtection");
  if (cp.length > 0) {
    const schemes = [...new Set(cp.map((e) => e.getAttribute("schemeIdUri") ?? "?"))];
    return new NuwaContentError("drm", `${cp.length} ContentProtection element(s), scheme ${schemes.join(", ")}; encrypted media needs a licence server and EME setup the glue does not do`);
  }
  if (o.isTypeSupported) {
    const by_type = new Map<string, { ok: boolean; types: Set<string> }>();
    for (const as of elements(doc, "AdaptationSet")) {
      for (const rep of children(as, "Representation")) {
        const mime = rep.getAttribute("mimeType") ?? as.getAttribute("mimeType") ?? "";
        const codecs = rep.getAttribute("codecs") ?? as.getAttribute("codecs") ?? "";
        const kind = as.getAttribute("contentType") ?? mime.split("/")[0] ?? "";
        if (kind !== "video" && kind !== "audio") continue; // text tracks: dash.js renders them itself
        const type = codecs ? `${mime}; codecs="${codecs}"` : mime;
        const entry = by_type.get(kind) ?? { ok: false, types: new Set<string>() };
        entry.types.add(type);
        if (!entry.ok && o.isTypeSupported(type)) entry.ok = true;
        by_type.set(kind, entry);
      }
    }
    for (const [kind, e] of by_type) {
      if (!e.ok) return new NuwaContentError("codec", `no ${kind} representation this browser decodes (${[...e.types].join(", ")})`);
    }
  }
  return null;
}

/** One media segment of a representation: start, s (its period's media time), duration, s, and bytes. */
export interface SegmentSize {
  start_s: number;
  duration_s: number;
  bytes: number;
}

/** Where a representation's segment sizes are. */
export interface RepresentationIndex {
  /** Representation@id. */
  rep_id: string;
  content_type: string;
  /** Sizes already in the MPD (SegmentList mediaRange), or null. */
  sizes: SegmentSize[] | null;
  /** A sidx to fetch (SegmentBase indexRange): the URL path, the inclusive byte range. */
  sidx: { url: string; range: [number, number] } | null;
}

/** `first-last` → [first, last], or null. */
function byteRange(v: string | null): [number, number] | null {
  const m = v ? /^\s*(\d+)-(\d+)\s*$/.exec(v) : null;
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/** The BaseURL chain of `el`'s ancestors and itself, resolved against `base`. */
function resolveBase(el: Element, base: string): string {
  const chain: Element[] = [];
  for (let e: Element | null = el; e; e = e.parentElement) chain.unshift(e);
  let url = base;
  for (const e of chain) {
    const b = children(e, "BaseURL")[0]?.textContent?.trim();
    if (b) url = new URL(b, url).href;
  }
  return url;
}

/**
 * The segment-size sources of every video and audio representation of an MPD (first Period
 * that names a representation id wins): SegmentList `mediaRange`s give the sizes at once;
 * SegmentBase `indexRange` names the sidx to fetch (its `Initialization` is not needed).
 * SegmentTemplate representations have no index (the MPC then scales nominal bitrates by the
 * sizes it has seen, mpc.ts `sizeRatio`).
 * @param text the MPD; @param mpd_url its absolute URL (BaseURLs resolve against it)
 */
export function segmentIndexPlan(text: string, mpd_url: string): RepresentationIndex[] {
  const doc = parseMpdXml(text);
  if (!doc) return [];
  const out: RepresentationIndex[] = [];
  const seen = new Set<string>();
  for (const as of elements(doc, "AdaptationSet")) {
    for (const rep of children(as, "Representation")) {
      const rep_id = rep.getAttribute("id") ?? "";
      if (!rep_id || seen.has(rep_id)) continue;
      const mime = rep.getAttribute("mimeType") ?? as.getAttribute("mimeType") ?? "";
      const content_type = as.getAttribute("contentType") ?? mime.split("/")[0] ?? "";
      const url = resolveBase(rep, mpd_url);
      const list = children(rep, "SegmentList")[0] ?? children(as, "SegmentList")[0];
      const sbase = children(rep, "SegmentBase")[0] ?? children(as, "SegmentBase")[0];
      if (list) {
        const timescale = Number(list.getAttribute("timescale") ?? "1");
        const duration = Number(list.getAttribute("duration") ?? "NaN") / timescale;
        const sizes: SegmentSize[] = [];
        for (const [i, su] of children(list, "SegmentURL").entries()) {
          const r = byteRange(su.getAttribute("mediaRange"));
          if (!r || !(duration > 0)) {
            sizes.length = 0;
            break;
          }
          sizes.push({ start_s: i * duration, duration_s: duration, bytes: r[1] - r[0] + 1 });
        }
        if (sizes.length > 0) {
          seen.add(rep_id);
          out.push({ rep_id, content_type, sizes, sidx: null });
        }
      } else if (sbase) {
        const r = byteRange(sbase.getAttribute("indexRange"));
        if (r) {
          seen.add(rep_id);
          out.push({ rep_id, content_type, sizes: null, sidx: { url, range: r } });
        }
      }
    }
  }
  return out;
}

/**
 * A sidx box (ISO/IEC 14496-12 §8.16.3) as segment sizes: each reference's referenced_size
 * bytes and subsegment_duration / timescale seconds, from earliest_presentation_time on.
 * `bytes` may hold other boxes first (a range that starts before the sidx): the first
 * top-level `sidx` is used.
 * @throws RangeError when there is no complete sidx box, or it references other sidx boxes (hierarchical index, not supported)
 */
export function parseSidx(bytes: Uint8Array): SegmentSize[] {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let off = 0;
  while (off + 8 <= bytes.length) {
    const size = dv.getUint32(off);
    const type = String.fromCharCode(bytes[off + 4]!, bytes[off + 5]!, bytes[off + 6]!, bytes[off + 7]!);
    if (size < 8 || off + size > bytes.length) break;
    if (type === "sidx") {
      const version = bytes[off + 8]!;
      const timescale = dv.getUint32(off + 16);
      let p = off + 20;
      let ept: number;
      if (version === 0) {
        ept = dv.getUint32(p);
        p += 8; // earliest_presentation_time, first_offset
      } else {
        ept = Number(dv.getBigUint64(p));
        p += 16;
      }
      const count = dv.getUint16(p + 2);
      p += 4;
      if (p + 12 * count > off + size || !(timescale > 0)) throw new RangeError("sidx: truncated or zero timescale");
      const out: SegmentSize[] = [];
      let t = ept;
      for (let i = 0; i < count; i++, p += 12) {
        const word = dv.getUint32(p);
        if (word >>> 31) throw new RangeError("sidx: references another sidx (hierarchical index), not supported");
        const d = dv.getUint32(p + 4);
        out.push({ start_s: t / timescale, duration_s: d / timescale, bytes: word & 0x7fffffff });
        t += d;
      }
      return out;
    }
    off += size;
  }
  throw new RangeError("sidx: no complete sidx box in the bytes");
}

/** Real segment sizes per representation id, fed by the MPD and fetched sidx boxes. */
export class SegmentSizes {
  private readonly by_rep = new Map<string, SegmentSize[]>();

  set(rep_id: string, sizes: SegmentSize[]): void {
    this.by_rep.set(rep_id, [...sizes].sort((a, b) => a.start_s - b.start_s));
  }

  has(rep_id: string): boolean {
    return this.by_rep.has(rep_id);
  }

  /**
   * Mean bytes of up to `n` segments of `rep_id` from the one that starts nearest `from_s` on
   * (the next segments the player will fetch), or null when the sizes are unknown or `from_s`
   * is past the last segment.
   */
  upcomingBytes(rep_id: string, from_s: number, n: number): number | null {
    const segs = this.by_rep.get(rep_id);
    if (!segs || segs.length === 0 || !Number.isFinite(from_s)) return null;
    const i = segs.findIndex((s) => s.start_s + s.duration_s / 2 > from_s);
    if (i < 0) return null;
    const take = segs.slice(i, i + Math.max(1, n));
    return take.reduce((a, s) => a + s.bytes, 0) / take.length;
  }
}

/** A representation's `$Number$` SegmentTemplate (ISO/IEC 23009-1 §5.3.9.4), as `nextSegmentPath` reads it. */
export interface NumberTemplate {
  /** Representation@id. */
  rep_id: string;
  /** Representation@bandwidth, bit/s (for `$Bandwidth$`). */
  bandwidth_bps: number;
  /** The `media` template and the URL it resolves against (the BaseURL chain). */
  media: string;
  base_url: string;
  /** `startNumber` (default 1) and the segment duration, s (`duration` ÷ `timescale`). */
  start_number: number;
  segment_s: number;
}

/**
 * Every representation whose SegmentTemplate (its own, else its AdaptationSet's) numbers media
 * segments with `$Number$` and a fixed `duration` (no SegmentTimeline, no `$Time$`), first
 * Period that names the id wins. Other addressing is left out: no fetch-ahead for it.
 * @param text the MPD; @param mpd_url its absolute URL
 */
export function segmentTemplates(text: string, mpd_url: string): NumberTemplate[] {
  const doc = parseMpdXml(text);
  if (!doc) return [];
  const out: NumberTemplate[] = [];
  const seen = new Set<string>();
  for (const as of elements(doc, "AdaptationSet")) {
    for (const rep of children(as, "Representation")) {
      const rep_id = rep.getAttribute("id") ?? "";
      const t = children(rep, "SegmentTemplate")[0] ?? children(as, "SegmentTemplate")[0];
      if (!rep_id || seen.has(rep_id) || !t || children(t, "SegmentTimeline").length > 0) continue;
      const media = t.getAttribute("media") ?? "";
      const segment_s = Number(t.getAttribute("duration") ?? "NaN") / Number(t.getAttribute("timescale") ?? "1");
      const start_number = Number(t.getAttribute("startNumber") ?? "1");
      if (!/\$Number(%0\d+d)?\$/.test(media) || media.includes("$Time") || !(segment_s > 0) || !Number.isInteger(start_number)) continue;
      seen.add(rep_id);
      out.push({ rep_id, bandwidth_bps: Number(rep.getAttribute("bandwidth") ?? "NaN"), media, base_url: resolveBase(rep, mpd_url), start_number, segment_s });
    }
  }
  return out;
}

/**
 * Expand a media template's identifiers (ISO/IEC 23009-1 §5.3.9.4.4, Table 16): `$$`,
 * `$RepresentationID$`, `$Number$` and `$Bandwidth$`, each optionally with a `%0<width>d`
 * format tag (zero-padded to width). `$Time$` and `$SubNumber$` are not expanded (null).
 */
export function expandNumberTemplate(media: string, rep_id: string, bandwidth_bps: number, number: number): string | null {
  let failed = false;
  const s = media.replace(/\$(\w*)(%0(\d+)d)?\$/g, (_m, id: string, _fmt, width?: string) => {
    const pad = (v: number) => (width ? String(v).padStart(Number(width), "0") : String(v));
    if (id === "") return "$";
    if (id === "RepresentationID") return rep_id;
    if (id === "Number") return pad(number);
    if (id === "Bandwidth" && Number.isFinite(bandwidth_bps)) return pad(bandwidth_bps);
    failed = true;
    return "";
  });
  return failed ? null : s;
}

/**
 * The URL path of the segment after the one at `path` (a media segment of `t` starting at
 * `start_s` into its Period), or null when `path` is not the template's segment for that start
 * (the number is read from the start and checked against the path: nothing is guessed).
 */
export function nextSegmentPath(t: NumberTemplate, path: string, start_s: number): string | null {
  if (!Number.isFinite(start_s) || start_s < 0) return null;
  const n = t.start_number + Math.round(start_s / t.segment_s);
  const url = (k: number) => {
    const m = expandNumberTemplate(t.media, t.rep_id, t.bandwidth_bps, k);
    return m === null ? null : new URL(m, t.base_url).pathname;
  };
  return url(n) === path ? url(n + 1) : null;
}

/** Most init segments `initSegmentPaths` names (a ladder of a few dozen representations at most; each is a few kB). */
export const MAX_INIT_SEGMENTS = 32;

/**
 * The URL paths of the initialization segments of every representation an MPD names, in document
 * order, first Period that names a representation id wins, at most MAX_INIT_SEGMENTS: a
 * SegmentTemplate's `initialization` (the nearest of the representation's, its AdaptationSet's and
 * its Period's that names one; ISO/IEC 23009-1 §5.3.9.4.2) with `$RepresentationID$` and `$Bandwidth$` expanded, or the `sourceURL` of a
 * SegmentBase's or SegmentList's `Initialization` (§5.3.9.2) that names a whole file (one with a
 * `range` is part of the media file: left out, as is a template with `$Number$` or `$Time$`). The
 * loader fetches them before dash.js asks (loader.ts `LoaderOptions.initPrefetch`).
 * @param text the MPD; @param mpd_url its absolute URL (BaseURLs resolve against it)
 * @returns paths (URL pathnames), empty when the MPD does not parse
 */
export function initSegmentPaths(text: string, mpd_url: string): string[] {
  const doc = parseMpdXml(text);
  if (!doc) return [];
  const out: string[] = [];
  const seen = new Set<string>();
  for (const as of elements(doc, "AdaptationSet")) {
    for (const rep of children(as, "Representation")) {
      if (out.length >= MAX_INIT_SEGMENTS) return out;
      const rep_id = rep.getAttribute("id") ?? "";
      if (!rep_id || seen.has(rep_id)) continue;
      seen.add(rep_id);
      const base = resolveBase(rep, mpd_url);
      // Segment information is inherited Representation → AdaptationSet → Period (§5.3.9.1): the
      // nearest level that names an initialization wins.
      const levels = [rep, as, ...(as.parentElement ? [as.parentElement] : [])];
      let rel: string | null = null;
      const init_t = levels.map((el) => children(el, "SegmentTemplate")[0]?.getAttribute("initialization")).find((v) => !!v);
      if (init_t) {
        if (!/\$(Number|Time|SubNumber)/.test(init_t)) rel = expandNumberTemplate(init_t, rep_id, Number(rep.getAttribute("bandwidth") ?? "NaN"), 0);
      } else {
        const init = levels.flatMap((el) => [...children(el, "SegmentBase"), ...children(el, "SegmentList")]).map((h) => children(h, "Initialization")[0]).find((i) => i !== undefined);
        if (init && !init.hasAttribute("range")) rel = init.getAttribute("sourceURL");
      }
      if (!rel) continue;
      let path: string;
      try {
        path = new URL(rel, base).pathname;
      } catch {
        continue;
      }
      if (!out.includes(path)) out.push(path);
    }
  }
  return out;
}
