"""Aggregation under early stopping and routing: labels equal full annotation, provenance, scope."""

from __future__ import annotations

import hashlib
from decimal import Decimal

import numpy as np
import pytest

from aggregation import rules
from aggregation.models import AgreementSnapshot, CriterionLabel
from aggregation.services.aggregate import project_aggregate
from annotation.models import Criterion, PanelLabel, RoutingPolicy, Sample, Slot
from annotation.services import routing, voting, work
from annotation.services.work_types import VoteRejected
from tests.annotation.work_data import GOOD, calibrate, make_formal
from tests.conftest import make_sample

from .votes import cast_all, criteria_of

pytestmark = pytest.mark.django_db


def fixed_choice(user_id: int, sample_id: int, criterion_id: int) -> str:
    """An annotator's predetermined answer: mostly A, some B, a few ties."""
    byte = hashlib.blake2s(f"{user_id}/{sample_id}/{criterion_id}".encode()).digest()[0]
    return "tie" if byte < 20 else ("B" if byte < 95 else "A")


def run_queue(project, users, *, rounds=400):
    """Annotators take turns asking for their next item and answering their fixed choice."""
    active = list(users)
    for _ in range(rounds):
        if not active:
            return
        for user in list(active):
            item = work.work_next(project=project, annotator=user)
            if item is None:
                active.remove(user)
                continue
            try:
                voting.vote_submit(
                    project=project,
                    annotator=user,
                    sample_id=item.sample.pk,
                    criterion_id=item.criterion.pk,
                    shown_choice=fixed_choice(user.pk, item.sample.pk, item.criterion.pk),
                    rationale=GOOD,
                    seconds=4.0,
                )
            except VoteRejected:  # no tie available yet: it comes back after the others
                work.item_skip(
                    project=project,
                    annotator=user,
                    sample_id=item.sample.pk,
                    criterion_id=item.criterion.pk,
                    reason="tie later",
                )
    raise AssertionError("the queue did not drain")


def test_a_replay_with_early_stopping_gives_the_full_protocols_labels(project, lead, annotators):
    project.annotators_per_sample = 3
    project.batch_size = 2
    project.shuffle_ab = False
    project.tie_cap = Decimal("1")
    project.early_stopping = True
    project.audit_share = Decimal("0.2")
    project.save()
    samples = make_formal(project, 40)
    users = annotators[:6]
    for user in users:
        calibrate(project, user, lead)
    run_queue(project, users)
    assert not Slot.objects.filter(sample__project=project, completed_at__isnull=True).exists()
    project_aggregate(project=project, n_boot=0)

    criteria = criteria_of(project)
    audited = {s.pk for s in samples if routing.sample_audited(project, s)}
    assert 0 < len(audited) < len(samples)
    saved = compared = 0
    for sample in samples:
        holders = list(Slot.objects.filter(sample=sample).values_list("annotator_id", flat=True))
        assert len(holders) == 3 and None not in holders
        for criterion in criteria:
            full = rules.aggregate_votes(
                [fixed_choice(h, sample.pk, criterion.pk) for h in holders], k=3
            )
            label = CriterionLabel.objects.get(sample=sample, criterion=criterion)
            n = label.votes_a + label.votes_b + label.votes_tie
            compared += 1
            assert (label.outcome, label.preference) == (full.outcome, full.preference)
            if n < 3:
                saved += 3 - n
                assert sample.pk not in audited
                assert label.provenance == "early_stopped"
            else:
                assert label.provenance == "human"
    assert compared == 40 * len(criteria)
    assert saved > 0
    snap = AgreementSnapshot.objects.get(project=project, split="open_ended").figures
    assert snap["fleiss_alpha_scope"]["scope"] == "audit"
    assert snap["policy"]["early_stopping"] is True
    assert snap["fleiss"]["items"] + snap["fleiss"]["items_excluded"] == len(audited) * len(
        criteria
    )
    assert snap["cohen"]["items"] == 40 * len(criteria)


def test_the_same_votes_without_early_stopping_are_missing_not_dropped(project, annotators):
    sample = make_sample(project, "x1")
    criterion = criteria_of(project)[0]
    cast_all(sample, criterion, annotators, "AB")
    project.audit_share = Decimal("0")
    project.save()
    project_aggregate(project=project, n_boot=0)
    label = CriterionLabel.objects.get(sample=sample)
    assert (label.outcome, label.provenance) == ("dropped_missing", "human")
    project.early_stopping = True
    project.save()
    out = project_aggregate(project=project, n_boot=0)
    label.refresh_from_db()
    assert (label.outcome, label.provenance) == ("dropped_split", "early_stopped")
    assert out["splits"]["open_ended"]["updated"] == 1
    assert out["splits"]["open_ended"]["provenance"]["early_stopped"] == 1
    # Into the audit share: the same votes are missing one again (the digest follows the flag).
    project.audit_share = Decimal("1")
    project.save()
    out = project_aggregate(project=project, n_boot=0)
    label.refresh_from_db()
    assert (label.outcome, label.provenance) == ("dropped_missing", "human")
    assert out["splits"]["open_ended"]["updated"] == 1


def test_routing_provenance_panel_human_and_overruled(project, annotators):
    project.routing_policy = RoutingPolicy.PANEL_VERIFIER
    project.audit_share = Decimal("0")
    project.save()
    criteria = criteria_of(project)
    sample = make_sample(project, "r1")
    for c in criteria[:3]:
        PanelLabel.objects.create(
            sample=sample, criterion=c, choice="B", unanimous=True, consistent=True, routable=True
        )
    cast_all(sample, criteria[0], annotators, "B")  # the verifier agrees
    cast_all(sample, criteria[1], annotators, "ABB")  # overruled, then full protocol
    cast_all(sample, criteria[2], annotators, "A")  # overruled, waiting for votes
    cast_all(sample, criteria[3], annotators, "A")  # no panel label: the normal protocol
    project_aggregate(project=project, n_boot=0)
    got = {
        label.criterion_id: (label.outcome, label.preference, label.provenance)
        for label in CriterionLabel.objects.filter(sample=sample)
    }
    assert got == {
        criteria[0].pk: ("kept_unanimous", "B", "panel_human"),
        criteria[1].pk: ("dropped_split", "", "panel_overruled"),
        criteria[2].pk: ("dropped_missing", "", "panel_overruled"),
        criteria[3].pk: ("dropped_missing", "", "human"),
    }
    # The panel label is part of the digest: a changed panel verdict relabels the item.
    PanelLabel.objects.filter(sample=sample, criterion=criteria[0]).update(choice="A")
    project_aggregate(project=project, n_boot=0)
    label = CriterionLabel.objects.get(sample=sample, criterion=criteria[0])
    assert (label.outcome, label.provenance) == ("dropped_missing", "panel_overruled")


def test_policies_off_keep_every_label_human_and_the_snapshot_unscoped(project, annotators):
    sample = make_sample(project, "h1")
    for c in criteria_of(project):
        cast_all(sample, c, annotators, "AAA")
    project_aggregate(project=project, n_boot=0)
    assert set(CriterionLabel.objects.values_list("provenance", flat=True)) == {"human"}
    snap = AgreementSnapshot.objects.get(project=project, split="open_ended").figures
    assert "fleiss_alpha_scope" not in snap


def test_audit_draw_is_reproducible(project):
    ids = [f"s-{i}" for i in range(2000)]
    from annotation import audit

    first = audit.audit_mask(7, ids, 0.2)
    assert np.array_equal(first, audit.audit_mask(7, list(reversed(ids)), 0.2)[::-1])
    assert 0.17 < first.mean() < 0.23
    bigger = audit.audit_mask(7, ids, 0.3)
    assert np.all(bigger[first])  # raising the share only adds samples
    assert not np.array_equal(first, audit.audit_mask(8, ids, 0.2))
    project.audit_seed = 7
    project.audit_share = Decimal("0.2")
    samples = [Sample(external_id=e) for e in ids[:50]]
    assert [routing.sample_audited(project, s) for s in samples] == first[:50].tolist()
    assert Criterion.objects.filter(project=project).exists()


def test_provenance_reaches_the_export_rows_and_the_manifest(project, lead, annotators):
    from aggregation.services.versions import version_build

    project.early_stopping = True
    project.routing_policy = RoutingPolicy.PANEL_VERIFIER
    project.audit_share = Decimal("0")
    project.audit_seed = 11
    project.save()
    c = criteria_of(project)
    s1, s2 = (make_sample(project, e) for e in ("e1", "e2"))
    PanelLabel.objects.create(
        sample=s1, criterion=c[0], choice="A", unanimous=True, consistent=True, routable=True
    )
    PanelLabel.objects.create(
        sample=s1, criterion=c[1], choice="A", unanimous=True, consistent=True, routable=True
    )
    cast_all(s1, c[0], annotators, "A")  # panel + human
    cast_all(s1, c[1], annotators, "BBB")  # overruled, kept B
    cast_all(s1, c[2], annotators, "AAA")  # human
    cast_all(s2, c[0], annotators, "AB")  # early-stopped (dropped, not a row)
    project_aggregate(project=project, n_boot=0)
    version = version_build(project=project, by=lead)
    rows = {(r.data["prompt_id"], r.data["criterion"]): r.data for r in version.rows.all()}
    assert {key: row["provenance"] for key, row in rows.items()} == {
        ("e1", c[0].key): "panel_human",
        ("e1", c[1].key): "panel_overruled",
        ("e1", c[2].key): "human",
    }
    assert rows[("e1", c[1].key)]["preference"] == "model_b"
    manifest = version.manifest
    assert manifest["counts"]["provenance"] == {
        "human": 1,
        "panel_human": 1,
        "panel_overruled": 1,
    }
    assert manifest["counts"]["labels_by_provenance"] == {
        "early_stopped": {"labels": 1, "kept": 0},
        "human": {"labels": 1, "kept": 1},
        "panel_human": {"labels": 1, "kept": 1},
        "panel_overruled": {"labels": 1, "kept": 1},
    }
    assert manifest["options"]["policy"] == {
        "early_stopping": True,
        "routing_policy": "panel_verifier",
        "audit_share": 0.0,
        "audit_seed": 11,
    }
    assert "provenance" in manifest["columns"]
    scope = manifest["agreement"]["open_ended"]["fleiss_alpha_scope"]
    assert (scope["scope"], scope["items"]) == ("audit", 0)  # an audit share of 0: none
    assert manifest["agreement"]["open_ended"]["fleiss"]["undefined_reason"] == "no audit item"
    assert set(manifest["aggregation_rule"]["provenance"]) == {
        "human",
        "early_stopped",
        "panel_human",
        "panel_overruled",
    }
    import pyarrow.parquet as pq

    with version.files.get(kind="parquet").file.open("rb") as fh:
        table = pq.read_table(fh)
    assert sorted(table.column("provenance").to_pylist()) == [
        "human",
        "panel_human",
        "panel_overruled",
    ]


def test_the_review_queue_shows_and_filters_by_provenance(client, project, lead, annotators):
    from django.urls import reverse

    project.routing_policy = RoutingPolicy.PANEL_VERIFIER
    project.audit_share = Decimal("0")
    project.save()
    c = criteria_of(project)
    routed, plain = (make_sample(project, e) for e in ("routed-1", "plain-1"))
    PanelLabel.objects.create(
        sample=routed, criterion=c[0], choice="A", unanimous=True, consistent=True, routable=True
    )
    cast_all(routed, c[0], annotators, "A")
    cast_all(plain, c[0], annotators, "BBB")
    project_aggregate(project=project, n_boot=0)
    client.force_login(lead)
    url = reverse("review-queue", args=[project.slug])
    page = client.get(url).content.decode()
    assert "routed-1" in page and "plain-1" in page
    assert 'class="prov prov-panel_human">panel + human</span>' in page
    assert 'id="f-provenance"' in page
    only = client.get(url, {"provenance": "panel_human"}).content.decode()
    assert "routed-1" in only and "plain-1" not in only
    human = client.get(url, {"provenance": "human"}).content.decode()
    assert "plain-1" in human and "routed-1" not in human
    item = client.get(reverse("review-item", args=[project.slug, routed.pk])).content.decode()
    assert "panel + human" in item


def test_the_dashboard_shows_votes_saved_and_the_audit_scope(client, project, lead, annotators):
    from django.urls import reverse

    from aggregation.selectors.savings import votes_saved

    project.early_stopping = True
    project.routing_policy = RoutingPolicy.PANEL_VERIFIER
    project.audit_share = Decimal("0")
    project.save()
    c = criteria_of(project)
    s1 = make_sample(project, "d1")
    PanelLabel.objects.create(
        sample=s1, criterion=c[0], choice="A", unanimous=True, consistent=True, routable=True
    )
    cast_all(s1, c[0], annotators, "A")  # 1 vote, 2 saved
    cast_all(s1, c[1], annotators, "AB")  # 2 votes, 1 saved
    project_aggregate(project=project, n_boot=0)
    savings = votes_saved(project=project)
    (row,) = savings["splits"]
    assert (row["cast"], row["saved"], row["stopped"], row["verified"]) == (3, 3, 1, 1)
    assert row["share"] == 0.5
    assert row["median_seconds"] == 12.0
    assert row["minutes"] == pytest.approx(0.6)
    client.force_login(lead)
    page = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    assert 'id="fig-saved"' in page and "Expert minutes saved" in page
    assert 'data-scope="audit"' in page and "audit share" in page


def test_the_dashboard_has_no_savings_card_when_both_are_off(client, project, lead):
    from django.urls import reverse

    client.force_login(lead)
    page = client.get(reverse("dashboard", args=[project.slug])).content.decode()
    assert 'id="fig-saved"' not in page


def test_a_replay_of_the_demo_project_keeps_every_label(db):
    """The demo's votes in the order they were cast: early stopping drops only unneeded ones."""
    from annotation import routing as rule
    from annotation.models import Project, Vote
    from demo.build import SLUG, demo_build

    demo_build()
    project = Project.objects.get(slug=SLUG)
    k = project.annotators_per_sample
    project_aggregate(project=project, n_boot=0)
    full = {
        (lab.sample_id, lab.criterion_id): (lab.is_kept, lab.preference)
        for lab in CriterionLabel.objects.filter(sample__project=project, sample__is_seed=False)
    }
    cast: dict[tuple[int, int], list[str]] = {}
    unasked = []
    saved_items: set[tuple[int, int]] = set()
    for pk, sample_id, criterion_id, choice in (
        Vote.objects.filter(sample__project=project, sample__is_seed=False, round=0)
        .order_by("id")
        .values_list("pk", "sample_id", "criterion_id", "choice")
    ):
        so_far = cast.setdefault((sample_id, criterion_id), [])
        a, b, t = (np.array([so_far.count(x)]) for x in ("A", "B", "tie"))
        if rule.asks_vote(a, b, t, k, stop=np.array([True]), panel=np.array([rule.PANEL_NONE]))[0]:
            so_far.append(choice)
        else:
            unasked.append(pk)
            saved_items.add((sample_id, criterion_id))
    assert unasked  # the demo has splits and double ties decided before the last vote
    Vote.objects.filter(pk__in=unasked).delete()
    project.early_stopping = True
    project.audit_share = Decimal("0")
    project.save()
    out = project_aggregate(project=project, n_boot=0)
    stopped = {
        (lab.sample_id, lab.criterion_id): (lab.is_kept, lab.preference)
        for lab in CriterionLabel.objects.filter(sample__project=project, sample__is_seed=False)
    }
    assert stopped == full
    n_stopped = sum(r["provenance"]["early_stopped"] for r in out["splits"].values())
    # Stopped: where votes went unasked, and the demo's unfinished items that could no longer
    # be kept either (the queue would not ask their last vote).
    cannot = {
        key
        for key, votes in cast.items()
        if len(votes) < k
        and not rules.can_still_be_kept(
            *(np.array([votes.count(x)]) for x in ("A", "B", "tie")), k
        )[0]
    }
    assert saved_items <= cannot
    assert n_stopped == len(cannot) > 0
