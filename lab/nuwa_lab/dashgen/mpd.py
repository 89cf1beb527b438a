"""The MPD: file names and templates of the presentation, and the normalisation of the
MPD ffmpeg writes (static, nothing time-dependent, no ``bitstreamSwitching``, no empty
``ServiceDescription`` nor ffmpeg's whitespace, a title)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from .params import DashGenError

MPD_NAME = "manifest.mpd"
INIT_TEMPLATE = "init-$RepresentationID$.m4s"
MEDIA_TEMPLATE = "seg-$RepresentationID$-$Number%05d$.m4s"

MPD_NS = "urn:mpeg:dash:schema:mpd:2011"
_XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
_XLINK_NS = "http://www.w3.org/1999/xlink"


def mpd_tag(tag: str) -> str:
    """``tag`` in the MPD namespace (ElementTree's ``{ns}tag``)."""
    return f"{{{MPD_NS}}}{tag}"


def rewrite_mpd(mpd_path: Path) -> ET.Element:
    """Normalise ffmpeg's MPD in place (what changes: this module's docstring); returns
    its root."""
    ET.register_namespace("", MPD_NS)
    ET.register_namespace("xsi", _XSI_NS)
    ET.register_namespace("xlink", _XLINK_NS)
    tree = ET.parse(mpd_path)
    root = tree.getroot()
    if root.get("type") != "static":
        raise DashGenError(f"ffmpeg wrote a non-static MPD (type={root.get('type')!r})")
    for attr in ("availabilityStartTime", "publishTime"):
        root.attrib.pop(attr, None)
    for sd in root.findall(mpd_tag("ServiceDescription")):
        if len(sd) == 0:
            root.remove(sd)
    for pi in root.findall(mpd_tag("ProgramInformation")):
        if len(pi) == 0:
            ET.SubElement(pi, mpd_tag("Title")).text = "Nuwa synthetic test content"
    for aset in root.iter(mpd_tag("AdaptationSet")):
        aset.attrib.pop("bitstreamSwitching", None)
    for el in root.iter():
        if len(el) == 0 and el.text is not None and not el.text.strip():
            el.text = None  # ffmpeg's "<SegmentTemplate ...>\n\t\t</SegmentTemplate>"
    ET.indent(tree, space="  ")
    text = ET.tostring(root, encoding="unicode", short_empty_elements=True)
    mpd_path.write_text('<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n", encoding="utf-8")
    return root


def segment_name(rep_id: str, number: int) -> str:
    """Media segment file name for ``$RepresentationID$`` and ``$Number$`` (1-based)."""
    return f"seg-{rep_id}-{number:05d}.m4s"


def init_name(rep_id: str) -> str:
    """Init segment file name for a representation id."""
    return f"init-{rep_id}.m4s"
