"""HLS playlists for a built presentation (issue 19 item 3): the same ffmpeg-made fMP4
segments (CMAF: one set of init and media segments, two manifests), so hls.js and dash.js
fetch byte-identical media and their runs compare on the same content.

Written beside the DASH files in the content directory (``master.m3u8``, one
``hls-<id>.m3u8`` media playlist per representation); they are derived from
``content.json`` alone, so the DASH cache key and files are unchanged (the 120 s content
stays ``fa3fee6ef0136c3d``). Deterministic text, written atomically (temporary file +
rename), rewritten only when it differs.

Format: RFC 8216 (HLS) with fMP4 segments (§3.3, ``EXT-X-MAP`` §4.3.2.5, version 6+;
we write 7), a VOD playlist type (§4.3.3.5), one ``EXT-X-STREAM-INF`` per video
representation (§4.3.4.2: ``BANDWIDTH`` is the representation's nominal bitrate, as the
MPD's ``@bandwidth``; ``CODECS`` video + audio; ``RESOLUTION``) in one audio group whose
``EXT-X-MEDIA`` (§4.3.4.1) is the AAC representation.
"""

from __future__ import annotations

import os
from pathlib import Path

from .content import ContentInfo
from .mpd import init_name, segment_name
from .segments import Representation

MASTER_NAME = "master.m3u8"
_AUDIO_GROUP = "aud"


def media_playlist_name(rep_id: str) -> str:
    """File name of a representation's media playlist."""
    return f"hls-{rep_id}.m3u8"


def media_playlist(rep: Representation, segment_duration_s: int, duration_s: int) -> str:
    """One representation's VOD media playlist: its init segment as ``EXT-X-MAP``, then
    ``segment_count`` media segments of ``segment_duration_s`` (the last one cut at
    ``duration_s``), relative URLs.

    Raises:
        ValueError: no segments, or segments that do not cover ``duration_s``.
    """
    n = rep.segment_count
    if n < 1 or n * segment_duration_s < duration_s:
        raise ValueError(
            f"representation {rep.id}: {n} segments of {segment_duration_s} s"
            f" do not cover {duration_s} s"
        )
    lines = [
        "#EXTM3U",
        "#EXT-X-VERSION:7",
        f"#EXT-X-TARGETDURATION:{segment_duration_s}",
        "#EXT-X-MEDIA-SEQUENCE:0",
        "#EXT-X-PLAYLIST-TYPE:VOD",
        "#EXT-X-INDEPENDENT-SEGMENTS",
        f'#EXT-X-MAP:URI="{init_name(rep.id)}"',
    ]
    for i in range(n):
        d = min(segment_duration_s, duration_s - i * segment_duration_s)
        if d <= 0:
            break
        lines += [f"#EXTINF:{d:.3f},", segment_name(rep.id, i + 1)]
    lines.append("#EXT-X-ENDLIST")
    return "\n".join(lines) + "\n"


def master_playlist(info: ContentInfo) -> str:
    """The multivariant playlist: the audio rendition, then one variant per video
    representation in ascending bandwidth."""
    a = info.audio
    lines = [
        "#EXTM3U",
        "#EXT-X-VERSION:7",
        "#EXT-X-INDEPENDENT-SEGMENTS",
        f'#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="{_AUDIO_GROUP}",NAME="audio",DEFAULT=YES,AUTOSELECT=YES,'
        f'CHANNELS="2",URI="{media_playlist_name(a.id)}"',
    ]
    for r in sorted(info.representations, key=lambda r: r.bandwidth_bps):
        lines += [
            f'#EXT-X-STREAM-INF:BANDWIDTH={r.bandwidth_bps},CODECS="{r.codecs},{a.codecs}",'
            f'RESOLUTION={r.width}x{r.height},FRAME-RATE={info.fps:.3f},AUDIO="{_AUDIO_GROUP}"',
            media_playlist_name(r.id),
        ]
    return "\n".join(lines) + "\n"


def _write_if_changed(path: Path, text: str) -> None:
    if path.is_file() and path.read_text() == text:
        return
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


def write_hls(info: ContentInfo) -> Path:
    """Write (or keep) the HLS playlists of ``info`` in its directory.

    Returns:
        the path of ``master.m3u8``.

    Raises:
        ValueError: a representation's segments do not cover the presentation.
    """
    texts = {MASTER_NAME: master_playlist(info)}
    for r in [*info.representations, info.audio]:
        texts[media_playlist_name(r.id)] = media_playlist(
            r, info.segment_duration_s, info.duration_s
        )
    for name, text in texts.items():
        _write_if_changed(info.dir / name, text)
    return info.dir / MASTER_NAME
