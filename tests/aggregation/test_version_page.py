"""A version's page: the lead's notes, the dataset card (also as Markdown), the diff to the last."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from aggregation.export.card import dataset_card, md_cell
from aggregation.export.diff import ADDED, CHANGED, REMOVED, rows_diff
from aggregation.forms import VERSION_NOTES_MAX_CHARS
from aggregation.models import DatasetRow, DatasetVersion
from aggregation.services.versions import version_build
from aggregation.views.versions import CHANGES_PER_PAGE
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP
from tests.aggregation.export_data import small_dataset
from tests.conftest import make_user
from tests.judging.web_data import HAND_ROWS, A, B, make_version

# --- Pure parts -----------------------------------------------------------------------------


def test_rows_diff_finds_added_removed_and_changed_rows_per_criterion():
    before = [
        ("p1__logic", "reasoning", "logic", A),
        ("p2__logic", "reasoning", "logic", A),
        ("p1__clarity", "open_ended", "clarity", B),
        ("p3__clarity", "open_ended", "clarity", A),
    ]
    after = [
        ("p1__logic", "reasoning", "logic", B),  # changed
        ("p1__clarity", "open_ended", "clarity", B),  # same
        ("p3__clarity", "open_ended", "clarity", A),  # same
        ("p4__clarity", "open_ended", "clarity", A),  # added
    ]  # p2__logic removed
    diff = rows_diff(before, after)
    assert [(c.question_id, c.kind, c.before, c.after) for c in diff.changes] == [
        ("p4__clarity", ADDED, None, A),
        ("p1__logic", CHANGED, A, B),
        ("p2__logic", REMOVED, A, None),
    ]
    assert [
        (c.split, c.criterion, c.added, c.removed, c.changed, c.unchanged)
        for c in diff.per_criterion
    ] == [("open_ended", "clarity", 1, 0, 0, 2), ("reasoning", "logic", 0, 1, 1, 0)]
    assert (diff.added, diff.removed, diff.changed, diff.is_empty) == (1, 1, 1, False)
    assert rows_diff(before, before).is_empty


def test_card_cells_cannot_break_the_markdown_table():
    assert md_cell("a | b\n<script>") == "a \\| b &lt;script&gt;"


def test_card_of_published_labels_says_there_is_no_agreement():
    card = dataset_card(
        {"version": 2, "project": {"name": "P", "slug": "p"}, "labels": {"provenance": "published",
         "source_files": ["a.parquet"]}, "counts": {"rows": 1, "per_split": {}}}
    )  # fmt: skip
    assert "# P: dataset version 2" in card
    assert "there are no votes to measure agreement on" in card
    assert "| Labels | published release: a.parquet |" in card


def test_card_lists_each_agreement_statistic_with_its_basis():
    card = dataset_card(
        {
            "version": 1,
            "project": {"name": "P", "slug": "p"},
            "counts": {"rows": 0, "per_split": {}},
            "agreement": {
                "open_ended": {
                    "cohen": {
                        "value": 0.71832,
                        "ci": [0.6, 0.8],
                        "pairs_used": 1,
                        "min_overlap": 10,
                    },
                    "fleiss": {"value": None, "undefined_reason": "every vote is A"},
                    "alpha": {"value": 0.5, "items": 1},
                }
            },
        }
    )
    assert (
        "| Open-ended | Cohen's κ (mean over annotator pairs) | 0.718 (95% CI 0.600–0.800) "
        "| 1 annotator pair used; a pair needs 10 shared items |"
    ) in card
    assert "| Open-ended | Fleiss' κ | n/a (every vote is A) |  |" in card
    assert "| Open-ended | Krippendorff's α (nominal) | 0.500 | 1 item |" in card


# --- The page -------------------------------------------------------------------------------


@pytest.fixture
def built(project, lead, annotators):
    small_dataset(project, annotators)
    return version_build(project=project, by=lead)


def detail_url(version: DatasetVersion) -> str:
    return reverse("version-detail", args=[version.project.slug, version.number])


def test_the_card_is_generated_from_the_manifest_and_downloads_as_markdown(client, lead, built):
    client.force_login(lead)
    response = client.get(reverse("version-card", args=[built.project.slug, built.number]))
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="{built.project.slug}-v1-dataset-card.md"'
    )
    card = response.content.decode()
    manifest = built.manifest
    counts = manifest["counts"]
    assert card.startswith("# Test project: dataset version 1\n")
    assert f"| Rows (prompt × criterion) | {counts['rows']:,} |" in card
    assert f"| Prompts | {counts['prompts']:,} |" in card
    for split, stats in counts["per_split"].items():
        for key, n in stats["per_criterion"].items():
            assert re.search(rf"\| `{re.escape(key)}` \| {n:,} \|", card), (split, key)
    assert "Rule `unanimous_or_majority_plus_tie`" in card
    assert "- dropped (dropped_split): votes for both A and B" in card
    assert f"`{manifest['data_sha256']}`" in card
    assert "| Built |" in card and "by lead |" in card
    for f in manifest["files"]:
        assert f"`{f['sha256']}`" in card
    assert "## Notes" not in card
    # The page shows the same card, rendered.
    page = client.get(detail_url(built)).content.decode()
    assert "<h1>Test project: dataset version 1</h1>" in page
    assert "<code>unanimous_or_majority_plus_tie</code>" in page


def test_the_lead_keeps_notes_on_a_frozen_version(client, lead, built):
    client.force_login(lead)
    url = reverse("version-notes", args=[built.project.slug, built.number])
    rows_before = list(DatasetRow.objects.filter(version=built).values_list("id", "data"))
    manifest_before = built.manifest
    response = client.post(url, {"notes": "Sent to **the workshop**.\n\n<script>x</script>"})
    assert response.status_code == 302 and response.url == detail_url(built)
    built.refresh_from_db()
    assert built.lead_notes == "Sent to **the workshop**.\n\n<script>x</script>"
    assert built.lead_notes_by == lead and built.lead_notes_at is not None
    # Metadata only: the frozen data did not change.
    assert built.manifest == manifest_before and built.status == "ready"
    assert list(DatasetRow.objects.filter(version=built).values_list("id", "data")) == rows_before
    page = client.get(detail_url(built)).content.decode()
    assert "Sent to <strong>the workshop</strong>." in page and "<script>x" not in page
    card = client.get(reverse("version-card", args=[built.project.slug, 1])).content.decode()
    assert card.endswith("## Notes\n\nSent to **the workshop**.\n\n<script>x</script>\n")
    # htmx: the notes panel comes back; empty notes clear them.
    panel = client.post(url, {"notes": "  "}, HTTP_HX_REQUEST="true").content.decode()
    assert (
        'id="version-notes"' in panel and "The notes are saved." in panel and "<html" not in panel
    )
    built.refresh_from_db()
    assert built.lead_notes == ""


def test_notes_over_the_limit_are_refused_with_the_text_kept(client, lead, built):
    client.force_login(lead)
    url = reverse("version-notes", args=[built.project.slug, built.number])
    text = "x" * (VERSION_NOTES_MAX_CHARS + 1)
    response = client.post(url, {"notes": text}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    html = response.content.decode()
    assert f"The note text is longer than {VERSION_NOTES_MAX_CHARS:,} characters" in html
    assert text in html  # kept in the field
    built.refresh_from_db()
    assert built.lead_notes == ""


def test_only_the_lead_writes_notes(client, project, built):
    member = make_user("member-ann", ANNOTATOR_GROUP)
    member_add(project=project, user=member)
    client.force_login(member)
    url = reverse("version-notes", args=[project.slug, built.number])
    assert client.post(url, {"notes": "mine"}).status_code == 403
    built.refresh_from_db()
    assert built.lead_notes == ""


def test_the_first_version_has_nothing_to_compare_with(client, lead, project):
    version = make_version(project)
    client.force_login(lead)
    page = client.get(detail_url(version)).content.decode()
    assert "the project's first ready version: there is nothing to compare it with" in page


def test_the_diff_lists_rows_added_removed_and_relabelled_since_the_last_version(
    client, lead, project
):
    make_version(project, HAND_ROWS, number=1)
    rows = [r for r in HAND_ROWS if r[0] != "p3"]  # p3's two rows removed
    rows[0] = ("p1", "open_ended", "completeness", B)  # was A
    rows.append(("p4", "reasoning", "logic", A))  # added
    make_version(project, [("x", "open_ended", "clarity", A)], number=2, status="failed")
    third = make_version(project, rows, number=3)
    client.force_login(lead)
    page = client.get(detail_url(third)).content.decode()
    # The previous ready version is v1 (v2 failed).
    assert re.search(r'Changes since <a href="[^"]+/versions/1/">v1</a>', page)
    assert "1 row added</strong>, <strong>2 rows removed</strong>, <strong>1 label changed" in page
    changed = re.findall(
        r'<tr class="(added|removed|changed)"><td class="ex-mono">([^<]+)</td>', page
    )
    assert changed == [
        ("changed", "p1__completeness"),
        ("removed", "p3__completeness"),
        ("removed", "p3__hallucination"),
        ("added", "p4__logic"),
    ]
    assert "<td>model_a</td><td>model_b</td>" in page  # p1 completeness: A before, B now


def test_the_changed_rows_are_paginated(client, lead, project):
    n = CHANGES_PER_PAGE + 3
    make_version(project, [(f"p{i}", "reasoning", "logic", A) for i in range(n)], number=1)
    second = make_version(project, [(f"p{i}", "reasoning", "logic", B) for i in range(n)], number=2)
    client.force_login(lead)
    first_page = client.get(detail_url(second)).content.decode()
    assert first_page.count('<tr class="changed">') == CHANGES_PER_PAGE
    assert f"Page 1 of 2 · {n} changed rows" in first_page
    last = client.get(detail_url(second), {"changes": 2}).content.decode()
    assert last.count('<tr class="changed">') == 3


def test_the_page_queries_do_not_grow_with_the_changes(client, lead, project):
    def queries(n: int, project) -> int:
        make_version(project, [(f"p{i}", "reasoning", "logic", A) for i in range(n)])
        rows = [(f"p{i}", "reasoning", "logic", B) for i in range(n)]
        second = make_version(project, rows, number=2)
        client.force_login(lead)
        with CaptureQueriesContext(connection) as captured:
            assert client.get(detail_url(second)).status_code == 200
        return len(captured)

    small = queries(2, project)
    large = queries(CHANGES_PER_PAGE + 10, project_create(name="Other", slug="other"))
    assert small == large
