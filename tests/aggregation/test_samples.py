"""The lead's sample browser: search, filters, keyset pages, one sample with its votes."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from aggregation.models import CriterionLabel, Outcome
from aggregation.selectors.samples import SampleFilters, samples_page
from annotation.models import Criterion, ProblemReport, SampleStatus, Vote
from tests.conftest import make_sample


@pytest.fixture
def world(project, annotators):
    """60 open-ended samples, 5 reasoning, a seed; labels and votes on the first three."""
    crits = list(Criterion.objects.filter(project=project, split="open_ended").order_by("order"))
    oe = [make_sample(project, f"oe-{i:03d}", question=f"Describe chart {i}.") for i in range(60)]
    rs = [
        make_sample(project, f"rs-{i:03d}", split="reasoning", question="Solve for the angle.")
        for i in range(5)
    ]
    seed = make_sample(project, "seed-1", is_seed=True, question="Calibrate on this.")
    now = timezone.now()
    for user, choice in zip(annotators[:3], "AAB", strict=True):
        Vote.objects.create(
            sample=oe[0],
            criterion=crits[0],
            annotator=user,
            choice=choice,
            rationale=f"{user.username} thinks {choice} grounds the bars better.",
            seconds=12,
        )
    Vote.objects.create(
        sample=seed,
        criterion=crits[0],
        annotator=annotators[0],
        choice="tie",
        rationale="Calibration thoughts.",
        round=1,
    )
    CriterionLabel.objects.create(
        sample=oe[0], criterion=crits[0], outcome=Outcome.DROPPED_SPLIT, computed_at=now
    )
    CriterionLabel.objects.create(
        sample=oe[1],
        criterion=crits[0],
        outcome=Outcome.KEPT_UNANIMOUS,
        preference="A",
        computed_at=now,
    )
    CriterionLabel.objects.create(
        sample=oe[2],
        criterion=crits[0],
        outcome=Outcome.KEPT_MAJORITY_TIE,
        preference="B",
        computed_at=now,
    )
    ProblemReport.objects.create(sample=oe[5], reporter=annotators[1], kind="broken_image")
    oe[6].status = SampleStatus.RETIRED
    oe[6].save()
    return {"oe": oe, "rs": rs, "seed": seed, "crits": crits, "users": annotators}


def ids(project, **filters):
    page = samples_page(project=project, filters=SampleFilters(**filters), per_page=100)
    return [s.external_id for s in page["rows"]]


def test_search_by_id_and_by_text(project, world):
    assert ids(project, q="oe-017") == ["oe-017"]
    assert ids(project, q="angle") == [f"rs-{i:03d}" for i in range(5)]
    assert ids(project, q="CALIBRATE") == ["seed-1"]


def test_filters_by_split_status_agreement_and_flags(project, world):
    assert len(ids(project, split="reasoning")) == 5
    assert ids(project, status="retired") == ["oe-006"]
    assert ids(project, status="seed") == ["seed-1"]
    assert ids(project, agreement="unanimous") == ["oe-001"]
    assert ids(project, agreement="majority_tie") == ["oe-002"]
    assert ids(project, agreement="dropped") == ids(project, agreement="split") == ["oe-000"]
    assert len(ids(project, agreement="none")) == 66 - 3
    assert ids(project, flags="open") == ids(project, flags="any") == ["oe-005"]
    assert ids(project, annotator=world["users"][0].pk) == ["oe-000", "seed-1"]
    assert ids(project, split="open_ended", q="chart 1") == [
        f"oe-{i:03d}" for i in [1, *range(10, 20)]
    ]


def test_keyset_pages_walk_forward_and_back_without_gaps(project, world):
    filters = SampleFilters()
    first = samples_page(project=project, filters=filters, per_page=25)
    assert first["total"] == 66 and first["prev_before"] is None
    second = samples_page(project=project, filters=filters, after=first["next_after"], per_page=25)
    third = samples_page(project=project, filters=filters, after=second["next_after"], per_page=25)
    seen = [s.pk for page in (first, second, third) for s in page["rows"]]
    assert len(seen) == len(set(seen)) == 66 and seen == sorted(seen)
    assert third["next_after"] is None
    back = samples_page(project=project, filters=filters, before=third["prev_before"], per_page=25)
    assert [s.pk for s in back["rows"]] == [s.pk for s in second["rows"]]


def test_page_query_count_does_not_grow_with_samples(client, project, world, lead):
    client.force_login(lead)
    url = reverse("samples", args=[project.slug])
    client.get(url)

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url + "?agreement=none").status_code == 200
        return len(ctx.captured_queries)

    before = count()
    for i in range(30):
        make_sample(project, f"more-{i}")
    assert count() == before


def test_the_list_page_shows_counts_and_pages(client, project, world, lead):
    client.force_login(lead)
    html = client.get(reverse("samples", args=[project.slug]) + "?q=oe-000").content.decode()
    assert "1 sample matches." in html
    assert "3 votes · 0 labels kept, 1 dropped" in html
    assert reverse("sample-detail", args=[project.slug, world["oe"][0].pk]) in html
    html = client.get(reverse("samples", args=[project.slug])).content.decode()
    assert "66 samples match." in html and 'rel="next"' in html and 'rel="prev"' not in html


def test_a_bad_filter_is_named_and_left_out(client, project, world, lead):
    client.force_login(lead)
    response = client.get(reverse("samples", args=[project.slug]) + "?split=nope&q=angle")
    html = response.content.decode()
    assert response.status_code == 200
    assert "split: Select a valid choice. nope is not one of the available choices." in html
    assert "5 samples match." in html


def test_sample_detail_names_every_annotator_with_their_vote_and_rationale(
    client, project, world, lead
):
    client.force_login(lead)
    sample = world["oe"][0]
    html = client.get(reverse("sample-detail", args=[project.slug, sample.pk])).content.decode()
    for user in world["users"][:3]:
        assert user.username in html
        assert f"{user.username} thinks" in html
    assert "Dropped: A/B split" in html or "dropped" in html.lower()
    seed_html = client.get(
        reverse("sample-detail", args=[project.slug, world["seed"].pk])
    ).content.decode()
    assert "calibration round 1" in seed_html and "Calibration thoughts." in seed_html


def test_sample_detail_is_404_for_another_projects_sample(client, project, world, lead):
    from annotation.services.projects import project_create

    other = project_create(name="Other", slug="other")
    foreign = make_sample(other, "x-1")
    client.force_login(lead)
    assert client.get(reverse("sample-detail", args=[project.slug, foreign.pk])).status_code == 404


@pytest.mark.parametrize("who", ["annotator", "outsider"])
def test_only_the_lead_browses_samples(client, project, world, outsider, who):
    client.force_login(world["users"][0] if who == "annotator" else outsider)
    assert client.get(reverse("samples", args=[project.slug])).status_code == 403
    url = reverse("sample-detail", args=[project.slug, world["oe"][0].pk])
    response = client.get(url)
    assert response.status_code == 403 and b"thinks" not in response.content


def test_sample_detail_shows_a_votes_earlier_versions(client, project, world, lead):
    from annotation.models import VoteRevision

    vote = Vote.objects.filter(sample=world["oe"][0], annotator=world["users"][0]).get()
    VoteRevision.objects.create(
        vote=vote,
        choice="tie",
        rationale="First I could not tell them apart.",
        recorded_at=timezone.now(),
        revised_by=world["users"][0],
    )
    client.force_login(lead)
    html = client.get(
        reverse("sample-detail", args=[project.slug, world["oe"][0].pk])
    ).content.decode()
    assert "revised 1 time" in html and "First I could not tell them apart." in html
