"""The tie cap in exact integer arithmetic (no Django, no floats).

With ``cap = p / q`` (the project's ``tie_cap`` as an exact fraction, 10% = 1/10), an
annotator who has cast ``n`` formal votes of which ``t`` are ties:

- may cast a NEW tie when ``(t + 1) * q < p * (n + 1)``, i.e. ties stay strictly below the cap
  counting the vote being cast. At 10% the first tie is possible at the 11th vote
  (1 < 1.1), the second at the 21st (2 < 2.1), never at the 10th (1 < 1.0 is false);
- may REVISE a non-tie vote to a tie when ``(t + 1) * q < p * n`` (the vote is already counted);
- has ``allowance = max(0, ceil((p * n - t * q) / (q - p)) - 1)`` ties available now: the
  largest ``m`` with ``(t + m) * q < p * (n + m)``, so ``m`` consecutive new votes may all be
  ties. With a cap of 100% every tie is allowed while ``t < n``; the allowance is then reported
  as :data:`UNLIMITED`.

Calibration votes never count: ``n`` and ``t`` are formal votes only.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

UNLIMITED = 1_000_000


def cap_fraction(cap: Decimal | str | int) -> tuple[int, int]:
    """The cap as an exact ``(p, q)`` with ``0 <= p <= q``."""
    p, q = Decimal(str(cap)).as_integer_ratio()
    if q <= 0 or p < 0 or p > q:
        raise ValueError(f"tie cap must be between 0 and 1, got {cap}")
    return p, q


def within_cap(*, ties: int, votes: int, cap: Decimal | str | int) -> bool:
    """True when ``ties`` is strictly below ``cap`` of ``votes``."""
    p, q = cap_fraction(cap)
    return ties * q < p * votes


def new_tie_allowed(*, ties: int, votes: int, cap: Decimal | str | int) -> bool:
    """May a new vote (the ``votes + 1``-th) be a tie, given ``ties`` ties so far?"""
    return within_cap(ties=ties + 1, votes=votes + 1, cap=cap)


def new_tie_allowed_sql(*, ties: str, votes: str, cap: Decimal | str | int) -> str:
    """:func:`new_tie_allowed` as a SQL condition on the columns ``ties`` and ``votes``."""
    p, q = cap_fraction(cap)
    return f"(({ties} + 1) * {q} < {p} * ({votes} + 1))"


def revise_to_tie_allowed(*, ties: int, votes: int, cap: Decimal | str | int) -> bool:
    """May one of the ``votes`` (not a tie now) become a tie?"""
    return within_cap(ties=ties + 1, votes=votes, cap=cap)


def allowance(*, ties: int, votes: int, cap: Decimal | str | int) -> int:
    """How many ties the annotator can cast now, one after the other."""
    p, q = cap_fraction(cap)
    room = p * votes - ties * q  # m ties fit while m * (q - p) < room
    if room <= 0:
        return 0
    if p == q:
        return UNLIMITED
    return (room - 1) // (q - p)


def votes_until_tie(*, ties: int, votes: int, cap: Decimal | str | int) -> int | None:
    """How many more non-tie votes before a new tie is allowed (0: now); None if never (cap 0).

    The smallest ``m`` with ``(t + 1) * q < p * (n + m + 1)``.
    """
    p, q = cap_fraction(cap)
    if p == 0:
        return None
    deficit = (ties + 1) * q - p * (votes + 1)
    return 0 if deficit < 0 else deficit // p + 1


def share_of_cap(*, ties: int, votes: int, cap: Decimal | str | int) -> float | None:
    """How much of the cap ``ties`` in ``votes`` use (1.0 = at the cap); None without votes."""
    p, q = cap_fraction(cap)
    if votes <= 0 or p == 0:
        return None
    return float(Fraction(ties * q, votes * p))


def at_cap(*, ties: int, votes: int, cap: Decimal | str | int) -> bool:
    """True when ``votes`` (at least one) hold ``ties`` at or above the cap."""
    return votes > 0 and not within_cap(ties=ties, votes=votes, cap=cap)
