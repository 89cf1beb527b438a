"""The repository cites only itself (issue 13 item 6): no path outside the checkout, and
the design notes it cites (docs/DESIGN.md) are in it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile(r"\.\./shared|/work/shared|(?<![\w/.-])(?:NOTES|SIMULATION|STYLE)\.md")
SECTION = re.compile(r"docs/DESIGN\.md §(\d+)")


def _tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    skip = (".json", ".png", ".onnx", ".mahi", ".lock", ".tgz", ".mp4", ".m4s")
    return [REPO_ROOT / n for n in names
            if not n.startswith("traces/") and not n.endswith(skip) and (REPO_ROOT / n).is_file()]


def test_no_file_cites_a_path_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    hits = []
    for p in _tracked_text_files():
        if p.resolve() == this:
            continue
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{p.relative_to(REPO_ROOT)}:{n}: {line.strip()[:120]}")
    assert hits == [], "\n".join(hits)


def test_cited_design_sections_exist() -> None:
    design = (REPO_ROOT / "docs" / "DESIGN.md").read_text()
    have = {int(m) for m in re.findall(r"^## §(\d+) ", design, re.M)}
    missing = []
    for p in _tracked_text_files():
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        missing += [f"{p.relative_to(REPO_ROOT)}: §{m}" for m in SECTION.findall(text)
                    if int(m) not in have]
    assert missing == [], missing
