"""Named sets of generation settings, registered in one place.

``published``: the Multi-Crit paper's evaluation settings — sampling at temperature 0.6 with top-p
0.95 and up to 8,192 new tokens — with its verifier fallback on (an output the parser cannot read
has its last four lines read by a verifier model). The prompt is the user's to bring: the official
template file is not shipped here; give it with ``--template`` or on the config form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Preset:
    """Settings a preset sets on a judge config."""

    key: str
    label: str
    settings: tuple[tuple[str, Any], ...]
    #: True when the preset needs a verifier config (the fallback it turns on).
    needs_verifier: bool = False

    def apply(self, target: Any) -> None:
        """Set the preset's settings on ``target`` (a JudgeConfig)."""
        for name, value in self.settings:
            setattr(target, name, value)

    def describe(self) -> str:
        shown = ", ".join(f"{name} {value}" for name, value in self.settings)
        return shown + (", verifier fallback on" if self.needs_verifier else "")


PUBLISHED = Preset(
    key="published",
    label="Published evaluation (temperature 0.6, top-p 0.95, 8,192 tokens, verifier fallback)",
    settings=(("temperature", 0.6), ("top_p", 0.95), ("max_tokens", 8192)),
    needs_verifier=True,
)

#: Every preset by key.
PRESETS: dict[str, Preset] = {p.key: p for p in (PUBLISHED,)}
VERIFIER_NEEDED = (
    "the {preset} preset turns on the verifier fallback: name a verifier judge config "
    "(a small model that reads the last lines of an unparsed output)"
)
