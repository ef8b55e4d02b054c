"""The audit share: a reproducible draw of samples that always get the full protocol.

Pure Python, no Django. A sample is in the audit share when a keyed hash of the project's audit
seed and the sample's external id, read as a number in [0, 1), falls below the share. The draw
depends on nothing else (not on import order, database ids or other samples), so the same
project with the same seed draws the same samples on any machine, and raising the share only
adds samples.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np


def audit_position(seed: int, external_id: str) -> float:
    """Where a sample falls in [0, 1) for the audit draw of ``seed``."""
    digest = hashlib.blake2b(
        external_id.encode("utf-8"), digest_size=8, key=str(int(seed)).encode("ascii")
    ).digest()
    return int.from_bytes(digest, "big") / 2**64


def in_audit(seed: int, external_id: str, share: float) -> bool:
    """True when the sample ``external_id`` is in the audit share ``share`` (0..1)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the audit share is between 0 and 1, not {share!r}")
    return audit_position(seed, external_id) < share


def audit_mask(seed: int, external_ids: Iterable[str], share: float) -> np.ndarray:
    """Vectorised :func:`in_audit` over many samples (a boolean array in the same order)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the audit share is between 0 and 1, not {share!r}")
    positions = np.fromiter((audit_position(seed, e) for e in external_ids), dtype=np.float64)
    return positions < share
