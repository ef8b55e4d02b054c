"""The README's code map and protocol table name files that exist (so the map stays true)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("core/", "annotation/", "aggregation/", "judging/", "demo/", "config/", "bench/")


def _named_paths() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return sorted(
        {p for p in re.findall(r"`([a-z_]+/[A-Za-z0-9_./]+)`", text) if p.startswith(APPS)}
    )


def test_every_path_the_readme_names_exists():
    paths = _named_paths()
    assert len(paths) >= 30  # the code map and the protocol table are there
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert missing == []
