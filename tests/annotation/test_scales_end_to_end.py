"""Graded and pointwise projects end to end: import, calibrate, vote, aggregate, version.

Every step goes through the same code a person reaches: the import service, the labeling and
calibration views over HTTP, the aggregation job's function and the version build.
"""

from __future__ import annotations

import io
import json
import re

import pandas as pd
import pytest
from django.test import Client

from aggregation.export.card import dataset_card
from aggregation.models import CriterionLabel, DatasetRow
from aggregation.services.aggregate import project_aggregate
from aggregation.services.versions import version_build
from annotation.importing.service import samples_import
from annotation.models import Criterion, ProjectMember, Sample, Slot, Vote, VoteRevision
from annotation.selectors.work import seed_swapped
from annotation.services.calibration import reference_label_set
from annotation.services.projects import member_add, project_create
from core.permissions import ANNOTATOR_GROUP
from core.tokens import token_create
from tests.annotation.import_data import sample_line, write_jsonl
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

RATIONALE = "Response A answers the question and B misses a part."
# Canonical answers per annotator (the same on every item): all prefer A.
GRADES = {"ann1": 2, "ann2": 1, "ann3": 1}
SCORES = {"ann1": (5, 2), "ann2": (4, 2), "ann3": (4, 3)}


def _project(scale: str, tmp_path, lead):
    project = project_create(name=f"{scale} study", slug=f"{scale}-study", label_scale=scale)
    path = write_jsonl(
        tmp_path / "data" / "samples.jsonl",
        [
            sample_line("seed-1", is_seed=True),
            sample_line("f-1"),
            sample_line("f-2"),
        ],
    )
    report = samples_import(project=project, path=path)
    assert report.samples == 3
    users = [make_user(name, ANNOTATOR_GROUP) for name in GRADES]
    for user in users:
        member_add(project=project, user=user)
    return project, users


def _answer(scale: str, user, swapped: bool) -> dict[str, str]:
    """The form fields that give ``user``'s canonical answer on a screen in this order."""
    if scale == "graded":
        grade = GRADES[user.username]
        return {"grade": str(-grade if swapped else grade)}
    a, b = SCORES[user.username]
    left, right = (b, a) if swapped else (a, b)
    return {"score_left": str(left), "score_right": str(right)}


def _screen_item(client, project) -> tuple[int, int] | None:
    html = client.get(f"/projects/{project.slug}/label/").content.decode()
    found = re.search(r'data-sample="(\d+)" data-criterion="(\d+)"', html)
    return (int(found[1]), int(found[2])) if found else None


def _label_everything(client, project, user, scale: str, *, seeds: bool) -> int:
    """Answer every item the screen serves ``user``; returns the number of votes cast."""
    client.force_login(user)
    n = 0
    while (item := _screen_item(client, project)) is not None:
        sample_id, criterion_id = item
        if seeds:
            swapped = seed_swapped(project, user.pk, sample_id)
        else:
            swapped = Slot.objects.get(sample_id=sample_id, annotator=user).swap_ab
        data = {
            "sample_id": sample_id,
            "criterion_id": criterion_id,
            "rationale": RATIONALE,
            "seconds": "4",
            **_answer(scale, user, swapped),
        }
        response = client.post(f"/projects/{project.slug}/label/", data)
        assert response.status_code == 302, response.content.decode()[:2000]
        n += 1
        assert n < 100
    return n


@pytest.mark.parametrize("scale", ["graded", "pointwise"])
def test_import_calibrate_vote_aggregate_version(client, tmp_path, lead, scale):
    project, users = _project(scale, tmp_path, lead)
    criteria = list(Criterion.objects.filter(project=project, split="open_ended"))
    seed = Sample.objects.get(project=project, external_id="seed-1")

    # Calibration: every annotator labels the seed, the lead's references say A.
    for user in users:
        assert _label_everything(client, project, user, scale, seeds=True) == len(criteria)
    for criterion in criteria:
        reference_label_set(sample=seed, criterion=criterion, preference="A", by=lead)
    client.force_login(lead)
    page = client.get(f"/projects/{project.slug}/calibration/").content.decode()
    expected = "A≫B" if scale == "graded" else "A 5 · B 2"
    assert expected in page  # the discussion shows the grades / scores beside the choice
    for user in users:
        member = ProjectMember.objects.get(project=project, user=user)
        response = client.post(
            f"/projects/{project.slug}/calibration/members/{member.pk}/calibrated/"
        )
        assert response.status_code == 302
        member.refresh_from_db()
        assert member.calibrated_at is not None  # agreement on the derived choice: 100%

    # Formal work on the screen, each annotator in their own A/B order.
    for user in users:
        assert _label_everything(client, project, user, scale, seeds=False) == 2 * len(criteria)
    formal = Vote.objects.filter(sample__project=project, round=Vote.FORMAL_ROUND)
    assert formal.count() == 3 * 2 * len(criteria)
    for vote in formal.select_related("annotator"):
        assert vote.choice == "A"  # derived from the canonical grade or scores
        if scale == "graded":
            assert vote.grade == GRADES[vote.annotator.username]
            assert (vote.score_a, vote.score_b) == (None, None)
        else:
            assert (vote.score_a, vote.score_b) == SCORES[vote.annotator.username]
            assert vote.grade is None

    # Aggregation: the protocol rule on the derived choice, plus the scale's figures.
    out = project_aggregate(project=project, split="open_ended", n_boot=20)
    assert out["splits"]["open_ended"]["kept"] == 2 * len(criteria)
    labels = CriterionLabel.objects.filter(sample__project=project)
    assert labels.count() == 2 * len(criteria)
    for label in labels:
        assert (label.outcome, label.preference, label.votes_a) == ("kept_unanimous", "A", 3)
        if scale == "graded":
            assert label.median_grade == 1.0
            assert label.soft_label == {"2": 1, "1": 2, "0": 0, "-1": 0, "-2": 0}
            assert (label.mean_score_a, label.mean_score_b) == (None, None)
        else:
            assert label.median_grade is None
            assert label.mean_score_a == pytest.approx(13 / 3, abs=1e-4)
            assert label.mean_score_b == pytest.approx(7 / 3, abs=1e-4)
            assert label.soft_label == {
                "a": {"1": 0, "2": 0, "3": 0, "4": 2, "5": 1},
                "b": {"1": 0, "2": 2, "3": 1, "4": 0, "5": 0},
            }

    # The lead's review shows each vote's grade / scores and the label's figures; the
    # dashboard the distribution per criterion.
    client.force_login(lead)
    sample = Sample.objects.get(project=project, external_id="f-1")
    review = client.get(f"/projects/{project.slug}/review/{sample.pk}/").content.decode()
    dashboard = client.get(f"/projects/{project.slug}/dashboard/").content.decode()
    n = len(criteria)
    if scale == "graded":
        answer = '<strong class="answer" title="The vote\'s grade">A&gt;B</strong>'
        assert review.count(answer) == 2 * n
        assert "median grade +1" in review
        assert "Grades per criterion" in dashboard
        # Per criterion: 2 samples x (1 A≫B, 2 A>B), nothing else; 6 votes.
        assert '<td class="num">2</td><td class="num">4</td><td class="num">0</td>' in dashboard
    else:
        assert "A 4 · B 3" in review and "mean score A 4.33 · B 2.33" in review
        assert "Scores per criterion" in dashboard

    # The version: rows carry the votes' grades / scores, the median / means and soft label.
    version = version_build(project=project, by=lead, include_votes=True)
    assert version.manifest["project"]["label_scale"] == scale
    card = dataset_card(version.manifest)
    assert f"| Label scale | {scale}: " in card
    rows = [r.data for r in DatasetRow.objects.filter(version=version)]
    assert len(rows) == 2 * len(criteria)
    for row in rows:
        if scale == "graded":
            assert sorted(row["grades"]) == [1, 1, 2]
            assert row["median_grade"] == 1.0
            assert row["soft_label"]["1"] == 2
            assert sorted(v["grade"] for v in row["votes"]) == [1, 1, 2]
        else:
            assert sorted(zip(row["scores_a"], row["scores_b"], strict=True)) == [
                (4, 2),
                (4, 3),
                (5, 2),
            ]
            assert row["mean_score_a"] == pytest.approx(4.3333)
            assert row["soft_label"]["b"]["2"] == 2
            assert {(v["score_a"], v["score_b"]) for v in row["votes"]} == {
                (4, 2),
                (4, 3),
                (5, 2),
            }
    if scale == "pointwise":
        assert set(version.manifest["project"]["rubrics"]) >= {
            f"open_ended/{c.key}" for c in criteria
        }
    # The dataset API returns the same fields, and each vote's grade or scores.
    key = token_create(user=lead, name="scripts", by=lead)[1]
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    page = api.get(f"/api/projects/{project.slug}/versions/{version.number}/rows/").json()
    first = page["results"][0]
    if scale == "graded":
        assert (first["median_grade"], sorted(first["grades"])) == (1.0, [1, 1, 2])
        assert sorted(v["grade"] for v in first["votes"]) == [1, 1, 2]
    else:
        assert first["soft_label"]["a"]["4"] == 2 and "mean_score_b" in first
        assert sorted(v["score_a"] for v in first["votes"]) == [4, 4, 5]
    with version.files.get(kind="parquet").file.open("rb") as fh:
        frame = pd.read_parquet(io.BytesIO(fh.read()))
    assert len(frame) == len(rows)
    if scale == "graded":
        assert frame["median_grade"].tolist() == [1.0] * len(rows)
        assert sorted(frame["grades"].iloc[0].tolist()) == [1, 1, 2]
    else:
        assert frame["mean_score_b"].round(4).tolist() == [2.3333] * len(rows)
        assert frame["soft_label"].iloc[0]["a"]["5"] == 1
    jsonl = json.loads(version.files.get(kind="jsonl").file.open("rb").readline())
    assert ("median_grade" in jsonl) == (scale == "graded")

    # -> score: a verdict judge right on every row, and a reward model right on all but one.
    from judging.models import Scorecard
    from judging.services.scoring import judge_run_upload

    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(
        "".join(
            json.dumps({"question_id": r["question_id"], "prediction": r["preference"]}) + "\n"
            for r in rows
        )
    )
    with verdicts.open("rb") as handle:
        judge_run_upload(version=version, judge="verdicts", file=handle, by=lead)
    card = Scorecard.objects.get(version=version, judge="verdicts", split="open_ended")
    assert (card.avg, card.pacc) == (100.0, 100.0)
    wrong = rows[0]["question_id"]
    scores = tmp_path / "scores.jsonl"
    lines = []
    for r in rows:
        better = r["preference"] == "model_a"
        if r["question_id"] == wrong:
            better = not better
        a, b = (2.5, 0.5) if better else (0.5, 2.5)
        lines.append(json.dumps({"question_id": r["question_id"], "score_a": a, "score_b": b}))
    scores.write_text("\n".join(lines) + "\n")
    with scores.open("rb") as handle:
        judge_run_upload(version=version, judge="reward", file=handle, by=lead, tie_margin=0.1)
    card = Scorecard.objects.get(version=version, judge="reward", split="open_ended")
    per_criterion = card.figures["per_criterion"]
    assert sum(c["correct"] for c in per_criterion.values()) == len(rows) - 1
    assert card.pacc == 50.0  # one of the two prompts has a criterion wrong


def test_a_changed_grade_with_the_same_choice_updates_the_label(client, tmp_path, lead):
    project, users = _project("graded", tmp_path, lead)
    project.vote_revision_window = "always"
    project.save()
    for user in users:
        ProjectMember.objects.filter(project=project, user=user).update(
            calibrated_at="2026-01-01T00:00Z"
        )
        _label_everything(client, project, user, "graded", seeds=False)
    project_aggregate(project=project, split="open_ended", n_boot=20)
    vote = Vote.objects.filter(annotator=users[2], round=0).order_by("pk").first()
    label = CriterionLabel.objects.get(sample=vote.sample, criterion=vote.criterion)
    assert (label.median_grade, label.soft_label["2"]) == (1.0, 1)
    # ann3 revises A>B to A≫B: the derived choice stays A, the grade changes.
    client.force_login(users[2])
    swapped = vote.shown_swapped
    response = client.post(
        f"/projects/{project.slug}/label/",
        {
            "sample_id": vote.sample_id,
            "criterion_id": vote.criterion_id,
            "grade": "-2" if swapped else "2",
            "rationale": RATIONALE,
        },
    )
    assert response.status_code == 302
    vote.refresh_from_db()
    assert (vote.choice, vote.grade) == ("A", 2)
    revision = VoteRevision.objects.get(vote=vote)
    assert (revision.choice, revision.grade) == ("A", 1)
    out = project_aggregate(project=project, split="open_ended", n_boot=20)
    assert out["splits"]["open_ended"]["updated"] == 1
    label.refresh_from_db()
    assert (label.median_grade, label.soft_label["2"], label.soft_label["1"]) == (2.0, 2, 1)
