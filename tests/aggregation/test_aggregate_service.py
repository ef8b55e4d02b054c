"""project_aggregate: labels from votes created directly, idempotence, exclusions, snapshots."""

from __future__ import annotations

import json

import pytest

from aggregation.models import AgreementSnapshot, CriterionLabel
from aggregation.services.aggregate import project_aggregate
from annotation.models import SampleStatus
from tests.conftest import make_sample

from .votes import cast, cast_all, criteria_of

pytestmark = pytest.mark.django_db

FIELDS = (
    "id",
    "sample_id",
    "criterion_id",
    "outcome",
    "preference",
    "votes_a",
    "votes_b",
    "votes_tie",
    "vote_ids",
    "computed_at",
)


def _rows():
    return list(CriterionLabel.objects.order_by("id").values_list(*FIELDS))


def _label(sample, criterion) -> CriterionLabel:
    return CriterionLabel.objects.get(sample=sample, criterion=criterion)


@pytest.fixture
def voted(project, annotators):
    """Two open-ended samples with every kind of outcome, plus a reasoning sample."""
    c = criteria_of(project)
    s1 = make_sample(project, "s1")
    s2 = make_sample(project, "s2")
    trio = annotators[:3]
    cast_all(s1, c[0], trio, "AAA")  # kept unanimous A
    cast_all(s1, c[1], trio, "BBt")  # kept majority + tie, B
    cast_all(s1, c[2], trio, "ABA")  # dropped split
    cast_all(s1, c[3], trio, "tAt")  # dropped ties
    cast_all(s1, c[4], trio, "AA")  # dropped missing
    other = annotators[3:6]
    cast_all(s2, c[0], other, "BBB")
    cast_all(s2, c[1], other, "ABt")  # split: A and B both present
    r = criteria_of(project, "reasoning")
    s3 = make_sample(project, "r1", split="reasoning")
    cast_all(s3, r[0], trio, "tBB")
    return {"c": c, "r": r, "s1": s1, "s2": s2, "s3": s3}


def test_labels_follow_the_protocol_rule(voted):
    c, s1, s2 = voted["c"], voted["s1"], voted["s2"]
    result = project_aggregate(project=s1.project, n_boot=20)
    expected = {
        (s1, c[0]): ("kept_unanimous", "A", 3, 0, 0),
        (s1, c[1]): ("kept_majority_tie", "B", 0, 2, 1),
        (s1, c[2]): ("dropped_split", "", 2, 1, 0),
        (s1, c[3]): ("dropped_ties", "", 1, 0, 2),
        (s1, c[4]): ("dropped_missing", "", 2, 0, 0),
        (s2, c[0]): ("kept_unanimous", "B", 0, 3, 0),
        (s2, c[1]): ("dropped_split", "", 1, 1, 1),
        (voted["s3"], voted["r"][0]): ("kept_majority_tie", "B", 0, 2, 1),
    }
    for (sample, criterion), values in expected.items():
        label = _label(sample, criterion)
        got = (label.outcome, label.preference, label.votes_a, label.votes_b, label.votes_tie)
        assert got == values, (sample, criterion.key)
        assert sorted(label.vote_ids) == sorted(
            sample.votes.filter(criterion=criterion).values_list("id", flat=True)
        )
        assert label.vote_ids == sorted(label.vote_ids)
    # Items without a single vote get no label.
    assert CriterionLabel.objects.count() == len(expected)
    open_ended = result["splits"]["open_ended"]
    assert open_ended["labels"] == 7 and open_ended["kept"] == 3
    assert open_ended["outcomes"] == {
        "kept_unanimous": 2,
        "kept_majority_tie": 1,
        "dropped_split": 2,
        "dropped_ties": 1,
        "dropped_missing": 1,
    }
    assert open_ended["samples"] == 2 and open_ended["samples_kept"] == 2
    assert open_ended["created"] == 7
    assert result["splits"]["reasoning"]["labels"] == 1
    assert "Open-ended: 3 of 7 labels kept, 2 of 2 samples" in result["summary"]
    json.dumps(result)


def test_running_twice_gives_identical_rows(voted):
    project = voted["s1"].project
    project_aggregate(project=project, n_boot=20)
    first = _rows()
    second_result = project_aggregate(project=project, n_boot=20)
    assert _rows() == first
    assert second_result["splits"]["open_ended"]["unchanged"] == 7
    assert second_result["splits"]["open_ended"]["created"] == 0
    assert second_result["splits"]["open_ended"]["updated"] == 0


def test_rerun_after_new_votes_updates_only_those_labels(voted, annotators):
    project, c, s1, s2 = voted["s1"].project, voted["c"], voted["s1"], voted["s2"]
    project_aggregate(project=project, n_boot=20)
    before = {(r[1], r[2]): r for r in _rows()}
    third = cast(s1, c[4], annotators[2], "A")  # completes "AA" -> "AAA"
    s2.votes.filter(criterion=c[1], choice="A").update(choice="B")  # "ABt" -> "BBt"
    s4 = make_sample(project, "s4")
    cast_all(s4, c[0], annotators[6:9], "AAB")
    result = project_aggregate(project=project, n_boot=20)["splits"]["open_ended"]
    assert (result["created"], result["updated"], result["unchanged"]) == (1, 2, 5)
    completed = _label(s1, c[4])
    assert (completed.outcome, completed.preference) == ("kept_unanimous", "A")
    assert third.id in completed.vote_ids
    assert completed.id == before[(s1.id, c[4].id)][0]  # ids are stable
    flipped = _label(s2, c[1])
    assert (flipped.outcome, flipped.preference) == ("kept_majority_tie", "B")
    assert _label(s4, c[0]).outcome == "dropped_split"
    untouched = _label(s1, c[0])  # unchanged votes: the row is not rewritten
    old = before[(s1.id, c[0].id)]
    assert (untouched.id, untouched.computed_at) == (old[0], old[FIELDS.index("computed_at")])


def test_labels_whose_votes_are_gone_are_removed(voted):
    project, s2 = voted["s1"].project, voted["s2"]
    project_aggregate(project=project, n_boot=20)
    s2.status = SampleStatus.RETIRED
    s2.save()
    result = project_aggregate(project=project, split="open_ended", n_boot=20)
    assert result["splits"]["open_ended"]["deleted"] == 2
    assert not CriterionLabel.objects.filter(sample=s2).exists()
    assert CriterionLabel.objects.filter(sample=voted["s3"]).count() == 1  # other split kept
    assert list(result["splits"]) == ["open_ended"]


def test_seeds_and_calibration_votes_are_excluded(project, annotators):
    c = criteria_of(project)
    seed = make_sample(project, "seed-1", is_seed=True)
    formal = make_sample(project, "f1")
    trio = annotators[:3]
    for a in trio:
        cast(seed, c[0], a, "A", round=1)  # calibration votes on a seed
        cast(formal, c[0], a, "B", round=1)  # a calibration round never counts
    cast_all(seed, c[1], trio, "AAA")  # even round-0 votes on a seed are not formal work
    cast_all(formal, c[1], trio, "BtB")
    project_aggregate(project=project, n_boot=0)
    labels = CriterionLabel.objects.all()
    assert [(lb.sample_id, lb.criterion_id) for lb in labels] == [(formal.id, c[1].id)]
    assert labels[0].outcome == "kept_majority_tie" and labels[0].vote_ids == sorted(
        formal.votes.filter(round=0).values_list("id", flat=True)
    )
    figures = AgreementSnapshot.objects.get(project=project, split="open_ended").figures
    assert figures["votes"] == 3 and figures["items"] == 1


def test_agreement_snapshot_figures(project, annotators):
    c = criteria_of(project)
    # 30 samples, each rated on every criterion by 3 of the 9 annotators in rotation.
    for i in range(30):
        sample = make_sample(project, f"s{i}")
        trio = [annotators[(i + d) % 9] for d in range(3)]
        for j, criterion in enumerate(c):
            pattern = "AAA" if (i + j) % 4 else ("BBt" if i % 2 else "ABA")
            cast_all(sample, criterion, trio, pattern)
    project_aggregate(project=project, min_overlap=5, n_boot=50, seed=1)
    snap = AgreementSnapshot.objects.get(project=project, split="open_ended")
    fig = snap.figures
    assert fig["split"] == "open_ended"
    assert fig["items"] == 150 and fig["samples"] == 30 and fig["votes"] == 450
    assert fig["annotators"] == 9 and fig["ratings_per_item"] == 3
    assert fig["categories"] == ["A", "B", "tie"]
    for name in ("cohen", "fleiss", "alpha"):
        stat = fig[name]
        assert isinstance(stat["value"], float) and stat["undefined_reason"] is None
        assert stat["ci"][0] <= stat["value"] <= stat["ci"][1]
    assert fig["cohen"]["min_overlap"] == 5
    assert fig["cohen"]["pairs_used"] + fig["cohen"]["pairs_skipped"] > 0
    assert set(fig["per_criterion"]) == {x.key for x in c}
    assert fig["per_criterion"][c[0].key]["items"] == 30
    usernames = sorted(a.username for a in annotators)
    assert fig["pairwise"]["annotators"] == usernames
    assert set(fig["per_annotator"]) == set(usernames)
    assert fig["per_annotator"]["ann1"]["items"] == 50  # in 10 samples' trios
    assert fig["bootstrap"]["n_boot"] == 50 and fig["bootstrap"]["seed"] == 1
    assert fig["computed_at"] == snap.computed_at.isoformat()
    # The reasoning split has criteria but no votes: its figures say why nothing is defined.
    reasoning = AgreementSnapshot.objects.get(project=project, split="reasoning").figures
    assert reasoning["items"] == 0
    assert reasoning["fleiss"]["value"] is None and reasoning["fleiss"]["undefined_reason"]


def test_unknown_split_is_refused(project):
    with pytest.raises(ValueError, match="unknown split"):
        project_aggregate(project=project, split="nonsense")


def test_progress_is_reported(voted):
    calls = []
    project_aggregate(
        project=voted["s1"].project,
        n_boot=0,
        progress=lambda done, total=None, message=None: calls.append((done, total, message)),
    )
    assert calls[0] == (0, 23, "reading votes")
    assert calls[-1] == (23, 23, "done")
    assert any("writing" in (m or "") for _, _, m in calls)


def test_an_unchanged_rerun_keeps_the_agreement_snapshot(voted, annotators):
    project, s2, c = voted["s1"].project, voted["s2"], voted["c"]
    first = project_aggregate(project=project, n_boot=20)["splits"]["open_ended"]
    assert first["agreement"] == "computed"
    snapshot = AgreementSnapshot.objects.get(project=project, split="open_ended")
    second = project_aggregate(project=project, n_boot=20)["splits"]["open_ended"]
    assert second["agreement"] == "unchanged"
    again = AgreementSnapshot.objects.get(project=project, split="open_ended")
    assert again.figures == snapshot.figures  # kept as they were, computed_at inside included
    assert again.computed_at > snapshot.computed_at  # the split was aggregated again
    # Other bootstrap options, a changed vote, a renamed annotator: computed again.
    assert project_aggregate(project=project, n_boot=30)["splits"]["open_ended"]["agreement"] == (
        "computed"
    )
    s2.votes.filter(criterion=c[0]).filter(annotator=annotators[3]).update(choice="A")
    result = project_aggregate(project=project, n_boot=30)["splits"]["open_ended"]
    assert (result["agreement"], result["updated"]) == ("computed", 1)
    annotators[3].username = "renamed"
    annotators[3].save()
    assert project_aggregate(project=project, n_boot=30)["splits"]["open_ended"]["agreement"] == (
        "computed"
    )
    figures = AgreementSnapshot.objects.get(project=project, split="open_ended").figures
    assert "renamed" in figures["pairwise"]["annotators"]


def test_a_new_k_relabels_every_item_whose_rule_outcome_changes(voted):
    project, s1, c = voted["s1"].project, voted["s1"], voted["c"]
    project_aggregate(project=project, n_boot=20)
    assert _label(s1, c[4]).outcome == "dropped_missing"  # "AA" with k = 3
    project.annotators_per_sample = 2
    project.save(update_fields=["annotators_per_sample"])
    result = project_aggregate(project=project, n_boot=20)["splits"]["open_ended"]
    assert result["updated"] == 7  # the digest holds k: every label is checked again
    assert (_label(s1, c[4]).outcome, _label(s1, c[4]).preference) == ("kept_unanimous", "A")


def test_an_unchanged_rerun_sees_a_new_policy_and_new_panel_labels(voted):
    """The re-run that reads nothing must still notice the inputs that are not votes."""
    from annotation.models import PanelLabel, RoutingPolicy

    project, s1, s2, c = voted["s1"].project, voted["s1"], voted["s2"], voted["c"]
    cast_all(s2, c[2], _voters(s2), "AB")
    project_aggregate(project=project, n_boot=0)
    assert project_aggregate(project=project, n_boot=0)["splits"]["open_ended"]["agreement"] == (
        "unchanged"
    )
    assert _label(s2, c[2]).outcome == "dropped_missing"
    project.audit_share = 0  # no audit sample: the policy applies everywhere
    project.early_stopping = True
    project.save()
    result = project_aggregate(project=project, n_boot=0)["splits"]["open_ended"]
    assert result["provenance"]["early_stopped"] == 1
    label = _label(s2, c[2])
    assert (label.outcome, label.provenance) == ("dropped_split", "early_stopped")
    assert _label(s1, c[4]).outcome == "dropped_missing"  # A, A: can still be kept
    project.routing_policy = RoutingPolicy.PANEL_VERIFIER
    project.save()
    project_aggregate(project=project, n_boot=0)
    PanelLabel.objects.create(
        sample=s1, criterion=c[4], choice="A", unanimous=True, consistent=True, routable=True
    )
    project_aggregate(project=project, n_boot=0)
    label = _label(s1, c[4])
    assert (label.outcome, label.preference, label.provenance) == (
        "kept_unanimous",
        "A",
        "panel_human",
    )


def _voters(sample):
    """The three annotators who voted on ``sample``."""
    from django.contrib.auth import get_user_model

    ids = sample.votes.values_list("annotator_id", flat=True).distinct()
    return list(get_user_model().objects.filter(pk__in=ids).order_by("pk"))[:3]
