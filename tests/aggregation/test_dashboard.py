"""The lead's dashboard: figures on a hand-built dataset, permissions, constant query count."""

from __future__ import annotations

import statistics
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from aggregation.models import AgreementSnapshot, CriterionLabel, Outcome, ReviewDecision
from aggregation.presenters.dashboard import dashboard_present, stat_display
from aggregation.selectors.dashboard import dashboard_figures
from annotation.models import Criterion, ProblemReport, Slot, Vote
from tests.conftest import make_sample


def vote(sample, criterion, user, choice="A", seconds=10.0, round=0):
    return Vote.objects.create(
        sample=sample,
        criterion=criterion,
        annotator=user,
        choice=choice,
        rationale="A rationale long enough.",
        seconds=seconds,
        round=round,
    )


def label(sample, criterion, outcome, preference=""):
    return CriterionLabel.objects.create(
        sample=sample,
        criterion=criterion,
        outcome=outcome,
        preference=preference if outcome in Outcome.kept() else "",
        computed_at=timezone.now(),
    )


def stat(value, ci=None, reason=None, **extra):
    return {"value": value, "ci": ci, "undefined_reason": reason, **extra}


@pytest.fixture
def data(project, annotators, lead):
    """s1 complete, s2 in progress, s3 untouched (open-ended); r1 reasoning untouched; a seed."""
    a1, a2, a3 = annotators[:3]
    crits = list(Criterion.objects.filter(project=project, split="open_ended").order_by("order"))
    s1, s2, s3 = (make_sample(project, f"s{i}") for i in (1, 2, 3))
    make_sample(project, "r1", split="reasoning")
    seed = make_sample(project, "seed", is_seed=True)
    for i, user in enumerate((a1, a2, a3), start=1):
        Slot.objects.create(sample=s1, index=i, annotator=user)
    Slot.objects.create(sample=s2, index=1, annotator=a1)
    # a1: 5 votes on s1 (one tie) + 2 on s2; a2, a3: 5 on s1 each (a2 has 2 ties).
    a1_seconds = [10, 20, 30, 40, 50, 60, 70]
    for c, secs in zip(crits, a1_seconds, strict=False):
        vote(s1, c, a1, "tie" if c == crits[4] else "A", seconds=secs)
    vote(s2, crits[0], a1, "A", seconds=60)
    vote(s2, crits[1], a1, "B", seconds=70)
    for c in crits:
        vote(s1, c, a2, "tie" if c in crits[3:] else "A", seconds=5)
        vote(s1, c, a3, "B" if c == crits[2] else "A", seconds=8)
    # Calibration votes on the seed never count as formal progress.
    vote(seed, crits[0], a1, "tie", seconds=999, round=1)
    # Two of a3's votes were cast two days ago; everything else today.
    old = Vote.objects.filter(annotator=a3, criterion__in=crits[:2])
    old.update(created_at=timezone.now() - timedelta(days=2))
    ProblemReport.objects.create(sample=s3, reporter=a2, kind="broken_image")
    ProblemReport.objects.create(sample=s2, reporter=a2, kind="other", note="odd")
    # Labels: s1 has a conflict (A vs B kept), s2 none, s3 only dropped labels.
    label(s1, crits[0], Outcome.KEPT_UNANIMOUS, "A")
    label(s1, crits[1], Outcome.KEPT_MAJORITY_TIE, "B")
    label(s1, crits[2], Outcome.DROPPED_SPLIT)
    label(s1, crits[3], Outcome.DROPPED_TIES)
    label(s1, crits[4], Outcome.DROPPED_MISSING)
    label(s2, crits[0], Outcome.KEPT_UNANIMOUS, "A")
    label(s2, crits[1], Outcome.KEPT_UNANIMOUS, "A")
    label(s3, crits[0], Outcome.DROPPED_MISSING)
    label(seed, crits[0], Outcome.KEPT_UNANIMOUS, "B")  # seeds are not exported by default
    ReviewDecision.objects.create(
        sample=s2, criterion=crits[1], action="discard", reason="redundant", author=lead
    )
    AgreementSnapshot.objects.create(
        project=project,
        split="open_ended",
        computed_at=timezone.now(),
        figures={
            "split": "open_ended",
            "items": 7,
            "cohen": stat(0.61, [0.5, 0.7], pairs_used=3, pairs_skipped=1, min_overlap=5),
            "fleiss": stat(None, reason="a single category everywhere"),
            "alpha": stat(0.58, [0.41, 0.72]),
            "per_criterion": {
                crits[0].key: {
                    "cohen": stat(0.9, [0.8, 1.0]),
                    "fleiss": stat(-0.25, [-0.4, -0.1]),
                    "alpha": stat(None, reason="fewer than 2 shared items"),
                    "items": 2,
                }
            },
            "per_annotator": {a1.username: {"cohen_vs_others": stat(0.66), "items": 7}},
            "pairwise": {
                "annotators": [a1.username, a2.username],
                "kappa": [[None, 0.4], [0.4, None]],
                "overlap": [[0, 5], [5, 0]],
            },
            "computed_at": timezone.now().isoformat(),
        },
    )
    return {"crits": crits, "users": (a1, a2, a3), "samples": (s1, s2, s3)}


def by_user(figures, user):
    return next(a for a in figures.annotators if a["username"] == user.username)


def test_progress_per_split(project, data):
    figures = dashboard_figures(project=project)
    open_ended = next(s for s in figures.splits if s["split"] == "open_ended")
    assert open_ended["samples"] == 3
    assert (open_ended["complete"], open_ended["in_progress"], open_ended["untouched"]) == (1, 1, 1)
    assert open_ended["votes_done"] == 17
    assert open_ended["votes_needed"] == 3 * 5 * 3
    assert open_ended["ties"] == 3
    assert open_ended["tie_rate"] == pytest.approx(3 / 17)
    assert open_ended["votes_today"] == 15
    reasoning = next(s for s in figures.splits if s["split"] == "reasoning")
    assert (reasoning["complete"], reasoning["in_progress"], reasoning["untouched"]) == (0, 0, 1)
    assert reasoning["tie_rate"] is None  # no votes: undefined, not 0
    assert figures.totals["samples"] == 4


def test_progress_per_annotator(project, data):
    a1, a2, a3 = data["users"]
    figures = dashboard_present(dashboard_figures(project=project))
    one, two, three = (by_user(figures, u) for u in (a1, a2, a3))
    assert (one["assigned"], one["done"], one["ties"]) == (10, 7, 1)
    assert one["tie_rate"] == pytest.approx(1 / 7)
    assert one["median_seconds"] == pytest.approx(40)
    assert one["over_cap"] is True  # 14.3% >= 10%
    assert (two["done"], two["ties"], two["flags"]) == (5, 2, 2)
    assert two["tie_rate"] == pytest.approx(0.4)
    assert two["median_seconds"] == pytest.approx(5)
    assert (three["ties"], three["over_cap"], three["votes_today"]) == (0, False, 3)
    assert three["tie_rate"] == 0
    idle = by_user(figures, data["users"][0].__class__.objects.get(username="ann9"))
    assert (idle["done"], idle["tie_rate"], idle["median_seconds"]) == (0, None, None)
    assert one["agreement"][0]["stat"]["text"] == "0.66"
    assert two["agreement"][0]["stat"]["undefined"] is True


def test_votes_in_two_splits_add_up_per_annotator_and_per_split(project, data):
    """Per-split figures and per-annotator totals come from one grouped pass: they must agree."""
    a1, a2, _ = data["users"]
    r1 = project.samples.get(external_id="r1")
    reasoning = list(Criterion.objects.filter(project=project, split="reasoning").order_by("order"))
    for c in reasoning:
        vote(r1, c, a1, "tie" if c == reasoning[0] else "B", seconds=100)
    vote(r1, reasoning[0], a2, "A", seconds=1)
    figures = dashboard_figures(project=project)
    split = next(s for s in figures.splits if s["split"] == "reasoning")
    n = len(reasoning) + 1
    assert (split["votes_done"], split["ties"], split["votes_today"]) == (n, 1, n)
    assert (split["complete"], split["in_progress"], split["untouched"]) == (0, 1, 0)
    open_ended = next(s for s in figures.splits if s["split"] == "open_ended")
    assert (open_ended["votes_done"], open_ended["ties"]) == (17, 3)
    assert figures.totals["votes_done"] == 17 + len(reasoning) + 1
    one, two = by_user(figures, a1), by_user(figures, a2)
    assert (one["done"], one["ties"]) == (7 + len(reasoning), 2)
    # a1's seconds: 10..70 on open-ended plus 100 per reasoning criterion.
    assert one["median_seconds"] == pytest.approx(
        statistics.median([10, 20, 30, 40, 50, 60, 70] + [100] * len(reasoning))
    )
    assert (two["done"], two["median_seconds"]) == (6, pytest.approx(5))


def test_results(project, data):
    figures = dashboard_figures(project=project)
    (res,) = figures.results
    counts = {o["outcome"]: o["n"] for o in res["outcomes"]}
    assert counts == {
        Outcome.KEPT_UNANIMOUS: 3,
        Outcome.KEPT_MAJORITY_TIE: 1,
        Outcome.DROPPED_SPLIT: 1,
        Outcome.DROPPED_TIES: 1,
        Outcome.DROPPED_MISSING: 2,
    }
    assert (res["kept"], res["dropped"]) == (4, 4)
    assert (res["samples_kept"], res["samples_dropped"]) == (2, 1)
    assert res["samples_conflict"] == 1
    assert res["conflict_share"] == pytest.approx(0.5)
    assert (res["exportable"], res["discarded_in_review"]) == (3, 1)
    balance = {b["criterion"].key: (b["a"], b["b"], b["share_a"]) for b in res["balance"]}
    crits = data["crits"]
    assert balance[crits[0].key] == (2, 0, 1.0)
    assert balance[crits[1].key] == (1, 1, 0.5)
    assert balance[crits[2].key] == (0, 0, None)


def test_exportable_matches_the_export_through_sample_discards_and_reversals(project, data, lead):
    """Exportable = kept minus review discards; it must agree with the export's selector."""
    from aggregation.selectors.review import exportable_labels

    s1, s2, _ = data["samples"]
    crits = data["crits"]
    # s1 discarded as a whole (2 kept labels go); s2's label discard is then reversed.
    ReviewDecision.objects.create(sample=s1, action="discard", reason="other", author=lead)
    ReviewDecision.objects.create(sample=s2, criterion=crits[1], action="keep", author=lead)
    (res,) = dashboard_figures(project=project).results
    assert (res["kept"], res["exportable"], res["discarded_in_review"]) == (4, 2, 2)
    assert res["exportable"] == exportable_labels(project=project).count()
    # A later sample-level keep restores s1; seeds count once the project exports them.
    ReviewDecision.objects.create(sample=s1, action="keep", author=lead)
    project.export_includes_seeds = True
    project.save(update_fields=["export_includes_seeds"])
    (res,) = dashboard_figures(project=project).results
    assert (res["kept"], res["exportable"], res["discarded_in_review"]) == (5, 5, 0)
    assert res["exportable"] == exportable_labels(project=project).count()


def test_agreement_rows_keep_undefined_as_na(project, data):
    figures = dashboard_present(dashboard_figures(project=project))
    (row,) = figures.agreement
    assert row["overall"]["cohen"]["text"] == "0.61"
    assert "3 pairs used, 1 skipped" in row["overall"]["cohen"]["title"]
    assert row["overall"]["fleiss"] == {
        "text": "n/a",
        "title": "a single category everywhere",
        "value": None,
        "ci": None,
        "undefined": True,
    }
    first = row["per_criterion"][0]
    assert first["key"] == data["crits"][0].key
    assert first["stats"]["fleiss"]["text"] == "-0.25"
    assert first["stats"]["alpha"]["title"] == "fewer than 2 shared items"
    assert row["matrix"][0]["cells"][1]["text"] == "0.40"
    assert stat_display(None)["text"] == "n/a"


def test_dashboard_page_for_the_lead(client, project, data, lead):
    client.force_login(lead)
    response = client.get(reverse("dashboard", args=[project.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    assert '<span class="na" title="a single category everywhere">n/a</span>' in html
    assert "50.0%" in html  # conflict share
    assert "<svg" in html and "heat-scale" in html
    assert "Cohen&#x27;s κ per annotator pair" in html or "Cohen's κ per annotator pair" in html


@pytest.mark.parametrize("who", ["annotator", "outsider", "anonymous"])
def test_nobody_else_sees_the_dashboard(client, project, data, who, outsider):
    if who == "annotator":
        client.force_login(data["users"][0])  # a member of the project
    elif who == "outsider":
        client.force_login(outsider)
    response = client.get(reverse("dashboard", args=[project.slug]))
    if who == "anonymous":
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    else:
        assert response.status_code == 403
    assert b"Annotators" not in response.content and b"ann2" not in response.content


def _queries(project) -> int:
    with CaptureQueriesContext(connection) as ctx:
        dashboard_figures(project=project)
    return len(ctx.captured_queries)


def test_query_count_does_not_grow_with_samples(project, annotators):
    crits = list(Criterion.objects.filter(project=project, split="open_ended").order_by("order"))

    def add(n, start):
        for i in range(start, start + n):
            s = make_sample(project, f"q{i}")
            for j, user in enumerate(annotators[:3], start=1):
                Slot.objects.create(sample=s, index=j, annotator=user)
                vote(s, crits[i % 5], user, "A")
            label(s, crits[i % 5], Outcome.KEPT_UNANIMOUS, "A")

    add(2, 0)
    small = _queries(project)
    add(12, 2)
    assert _queries(project) == small
    assert small <= 16


def test_dashboard_shows_the_job_panel_and_the_build_button(client, project, data, lead):
    client.force_login(lead)
    html = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    assert f'action="{reverse("aggregation-start", args=[project.slug])}"' in html
    assert f'action="{reverse("version-build", args=[project.slug])}"' in html
    assert "No aggregation has run yet." in html


def test_figures_from_the_real_aggregation(client, project, annotators, lead):
    """Votes -> project_aggregate -> the dashboard reads its labels and snapshot as they are."""
    from aggregation.services.aggregate import project_aggregate

    crits = list(Criterion.objects.filter(project=project, split="open_ended").order_by("order"))
    raters = annotators[:3]
    for i in range(8):
        s = make_sample(project, f"agg{i}")
        for c in crits[:2]:
            # Criterion 0: unanimous A; criterion 1: unanimous B on even samples, A/B split else.
            choices = "AAA" if c == crits[0] else ("BBB" if i % 2 == 0 else "ABB")
            for user, choice in zip(raters, choices, strict=True):
                vote(s, c, user, choice)
    project_aggregate(project=project, n_boot=50)
    figures = dashboard_present(dashboard_figures(project=project))
    (res,) = figures.results
    assert (res["kept"], res["dropped"]) == (12, 4)
    assert res["samples_conflict"] == 4 and res["conflict_share"] == pytest.approx(0.5)
    row = next(r for r in figures.agreement if r["split"] == "open_ended")
    assert row["items"] == 16
    assert [c["key"] for c in row["per_criterion"]] == [c.key for c in crits]
    assert row["per_criterion"][2]["stats"]["cohen"]["text"] == "n/a"  # no votes on it
    # Criterion 0 has a single category everywhere: its kappa is undefined, shown as n/a.
    assert row["per_criterion"][0]["stats"]["fleiss"]["undefined"] is True
    assert row["per_criterion"][0]["stats"]["fleiss"]["title"]
    assert len(row["matrix"]) == 3
    client.force_login(lead)
    assert client.get(reverse("dashboard", args=[project.slug])).status_code == 200


def test_page_query_count_does_not_grow_with_samples(client, project, data, lead):
    client.force_login(lead)
    url = reverse("dashboard", args=[project.slug])
    client.get(url)  # warm the session and the group cache of the user

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url).status_code == 200
        return len(ctx.captured_queries)

    before = count()
    a1, a2, a3 = data["users"]
    crits = data["crits"]
    for i in range(10):
        s = make_sample(project, f"extra{i}")
        for j, user in enumerate((a1, a2, a3), start=1):
            Slot.objects.create(sample=s, index=j, annotator=user)
            vote(s, crits[0], user, "B")
        label(s, crits[0], Outcome.KEPT_UNANIMOUS, "B")
    assert count() == before
