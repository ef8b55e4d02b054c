"""CSV files that a spreadsheet opens as data, never as formulas: every CSV served is written here.

Cells come from untrusted files (prompt ids, sources, model and judge names, criterion names).
A spreadsheet reads a cell whose text starts with ``=``, ``+``, ``-`` or ``@`` as a formula,
some also after a tab or a carriage return, and some fold the full-width forms (``＝ ＋ － ＠``)
to those. Following OWASP's guidance on CSV injection, such a text cell is written with a leading
apostrophe, which the spreadsheet shows as text and does not run. Leading white space does not
hide a formula: a text is checked from its first non-blank character.

Numbers stay numbers. An int or float cell is written as it is, and so is a text that is exactly
a plain decimal number (``-3.5``, ``+2``, ``1e-3``): a spreadsheet reads it as that number, which
can run nothing, and a figure formatted as text (a negative difference, say) keeps its value.
Anything else that looks like a number but is not one (``-2+3``) is neutralised.

Rows end with CR LF, as RFC 4180 has it. The standard writer quotes a cell holding a character
of the line ending, so with CR LF a carriage return or line feed inside a cell is always quoted:
with a bare LF ending, a CR inside a cell would be written bare and read as a row break, its
rest a fresh cell the apostrophe no longer guards.

Plain Python (no Django), so the file writers that are pure code can use it too.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

#: First characters that make a spreadsheet read a text cell as a formula (with the full-width
#: equals, plus, minus and at sign).
FORMULA_STARTS = frozenset("=+-@\t\r\uff1d\uff0b\uff0d\uff20")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def spreadsheet_text(text: str) -> str:
    """``text`` as a cell no spreadsheet runs: a leading ``'`` when it could start a formula."""
    if _PLAIN_NUMBER.fullmatch(text):
        return text
    first = text[:1]
    if first not in FORMULA_STARTS:
        stripped = text.lstrip()
        first = stripped[:1]
    return f"'{text}" if first in FORMULA_STARTS else text


def spreadsheet_cell(value: Any) -> Any:
    """A cell for the CSV writer: numbers and empty cells as they are, the rest as safe text."""
    if value is None or isinstance(value, (int, float, Decimal)):
        return value
    return spreadsheet_text(str(value))


class SafeCsvWriter:
    """The standard CSV writer (CR LF rows), each cell passed through :func:`spreadsheet_cell`."""

    def __init__(self, out: Any) -> None:
        self._writer = csv.writer(out, lineterminator="\r\n")

    def writerow(self, row: Iterable[Any]) -> Any:
        """Write one row; returns what the output's ``write`` returned (a streamed line)."""
        return self._writer.writerow([spreadsheet_cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(out: Any) -> SafeCsvWriter:
    """A CSV writer on ``out`` (anything with ``write``) whose cells are spreadsheet-safe."""
    return SafeCsvWriter(out)
