"""Count texts: the one place that puts a noun in the form its count takes.

Every count shown to people ("1 tie in 1 vote", "3 ties in 40 votes", "2 criteria") goes
through :func:`counted`, in Python and, as the ``counted`` template filter, in templates.
Plain Python (no Django), so the pure cores may use it too.
"""

from __future__ import annotations


def plural_form(n: int | float, singular: str, plural: str | None = None) -> str:
    """The noun alone, singular for exactly 1 and plural otherwise (``plural`` or noun + s)."""
    return singular if n == 1 else (plural if plural is not None else f"{singular}s")


def counted(n: int | float | None, singular: str, plural: str | None = None) -> str:
    """``n`` with its noun: ``counted(1, "tie")`` is "1 tie", ``counted(1200, "row")`` "1,200 rows".

    Irregular plurals are given: ``counted(2, "criterion", "criteria")``.
    """
    n = n or 0
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    shown = f"{n:,}" if isinstance(n, int) else f"{n:,.2f}"
    return f"{shown} {plural_form(n, singular, plural)}"
