"""Review decisions: appended, the latest counts, validated; only the lead may write or read."""

from __future__ import annotations

from html import escape

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from aggregation.models import ReviewDecision, SampleReview
from aggregation.selectors.review import exportable_labels
from aggregation.services.review import (
    review_decide,
    sample_mark_reviewed,
    sample_unmark_reviewed,
)
from annotation.models import Criterion
from tests.conftest import make_sample


def exported(project):
    return [
        (lab.sample.external_id, lab.criterion.key) for lab in exportable_labels(project=project)
    ]


def test_discard_then_restore_appends_and_the_latest_counts(project, lead, review_setup):
    crits, s1, _ = review_setup
    assert len(exported(project)) == 3
    review_decide(
        sample=s1, criterion=crits[0], action="discard", reason="inconsistent", author=lead
    )
    assert (s1.external_id, crits[0].key) not in exported(project)
    assert len(exported(project)) == 2
    review_decide(sample=s1, criterion=crits[0], action="keep", note="re-read it", author=lead)
    assert (s1.external_id, crits[0].key) in exported(project)
    history = list(ReviewDecision.objects.filter(sample=s1).values_list("action", "reason", "note"))
    assert history == [("discard", "inconsistent", ""), ("keep", "", "re-read it")]


def test_whole_sample_discard_and_restore(project, lead, review_setup):
    crits, s1, s2 = review_setup
    review_decide(sample=s1, action="discard", reason="redundant", author=lead)
    assert exported(project) == [(s2.external_id, crits[0].key)]
    review_decide(sample=s1, action="keep", author=lead)
    assert len(exported(project)) == 3
    assert ReviewDecision.objects.filter(sample=s1, criterion=None).count() == 2


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"action": "discard"}, "reason"),
        ({"action": "discard", "reason": "bogus"}, "reason"),
        ({"action": "discard", "reason": "other"}, "note"),
        ({"action": "discard", "reason": "other", "note": "   "}, "note"),
        ({"action": "erase"}, "action"),
    ],
)
def test_invalid_decisions_are_refused_and_nothing_is_written(
    project, lead, review_setup, kwargs, field
):
    crits, s1, _ = review_setup
    with pytest.raises(ValidationError) as exc:
        review_decide(sample=s1, criterion=crits[0], author=lead, **kwargs)
    assert field in exc.value.message_dict
    assert ReviewDecision.objects.count() == 0


def test_other_with_a_note_is_accepted(project, lead, review_setup):
    crits, s1, _ = review_setup
    d = review_decide(
        sample=s1, criterion=crits[0], action="discard", reason="other", note=" dup ", author=lead
    )
    assert (d.reason, d.note, d.author) == ("other", "dup", lead)


def test_only_kept_labels_of_the_sample_can_be_reviewed(project, lead, review_setup):
    crits, s1, _ = review_setup
    with pytest.raises(ValidationError, match="kept by aggregation"):
        review_decide(sample=s1, criterion=crits[2], action="keep", author=lead)
    other_split = Criterion.objects.filter(project=project, split="reasoning").first()
    with pytest.raises(ValidationError, match="does not belong"):
        review_decide(sample=s1, criterion=other_split, action="keep", author=lead)


def test_non_leads_cannot_decide_or_mark(project, annotators, review_setup):
    crits, s1, _ = review_setup
    with pytest.raises(PermissionDenied):
        review_decide(
            sample=s1,
            criterion=crits[0],
            action="discard",
            reason="other",
            note="x",
            author=annotators[0],
        )
    with pytest.raises(PermissionDenied):
        sample_mark_reviewed(sample=s1, by=annotators[0])
    assert not ReviewDecision.objects.exists() and not SampleReview.objects.exists()


def test_mark_and_unmark_reviewed_keep_decisions(project, lead, review_setup):
    crits, s1, _ = review_setup
    review_decide(sample=s1, criterion=crits[0], action="keep", author=lead)
    first = sample_mark_reviewed(sample=s1, by=lead)
    again = sample_mark_reviewed(sample=s1, by=lead)
    assert first.pk == again.pk and again.reviewed_at >= first.reviewed_at
    sample_unmark_reviewed(sample=s1, by=lead)
    assert not SampleReview.objects.filter(sample=s1).exists()
    assert ReviewDecision.objects.filter(sample=s1).count() == 1


# --- views -----------------------------------------------------------------------------------


def decide_url(project, sample):
    return reverse("review-decide", args=[project.slug, sample.pk])


def test_item_page_shows_votes_grouped_and_renders_responses_safely(
    client, project, lead, review_setup
):
    crits, s1, _ = review_setup
    client.force_login(lead)
    html = client.get(reverse("review-item", args=[project.slug, s1.pk])).content.decode()
    assert "<strong>bold</strong>" in html  # Markdown rendered
    assert "<script>alert('a')</script>" not in html and "onerror" not in html
    assert "&lt;b&gt;ann1&lt;/b&gt; says A" in html  # rationales are escaped
    first, second = (escape(c.name) for c in crits[:2])
    assert html.index(first) < html.index("ann1&lt;/b&gt; says A") < html.index(second)
    assert "Kept: unanimous" in html and "Dropped: A/B split" in html
    assert html.count("data-reviewable") == 2  # the two kept labels get keep/discard


def test_plain_post_decides_and_redirects_keeping_filters(client, project, lead, review_setup):
    crits, s1, _ = review_setup
    client.force_login(lead)
    response = client.post(
        decide_url(project, s1),
        {
            "criterion": crits[0].pk,
            "action": "discard",
            "reason": "redundant",
            "filters": "?split=open_ended",
        },
    )
    assert response.status_code == 302
    assert (
        response["Location"]
        == reverse("review-item", args=[project.slug, s1.pk]) + "?split=open_ended"
    )
    d = ReviewDecision.objects.get()
    assert (d.criterion, d.action, d.reason, d.author) == (crits[0], "discard", "redundant", lead)


def test_htmx_post_returns_the_fragment_with_a_toast(client, project, lead, review_setup):
    crits, s1, _ = review_setup
    client.force_login(lead)
    response = client.post(
        decide_url(project, s1),
        {"criterion": crits[1].pk, "action": "discard", "reason": "inconsistent"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="review-body">')
    assert "<html" not in html and "Restore" in html
    assert "discarded" in response["HX-Trigger"]


def test_invalid_post_shows_the_error_and_writes_nothing(client, project, lead, review_setup):
    crits, s1, _ = review_setup
    client.force_login(lead)
    response = client.post(decide_url(project, s1), {"criterion": crits[0].pk, "action": "discard"})
    assert response.status_code == 400
    assert "A discard needs a reason" in response.content.decode()
    response = client.post(
        decide_url(project, s1),
        {"criterion": crits[0].pk, "action": "discard", "reason": "other"},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert "Say why in the note" in html
    assert 'value="other" checked' in html  # the lead's choice is kept
    assert not ReviewDecision.objects.exists()


def test_mark_reviewed_and_go_next(client, project, lead, review_setup):
    _, s1, s2 = review_setup
    client.force_login(lead)
    response = client.post(
        reverse("review-mark", args=[project.slug, s1.pk]),
        {"reviewed": "1", "go": "next", "filters": "?unreviewed=1"},
    )
    assert (
        response["Location"] == reverse("review-item", args=[project.slug, s2.pk]) + "?unreviewed=1"
    )
    assert SampleReview.objects.get().sample == s1
    response = client.post(
        reverse("review-mark", args=[project.slug, s2.pk]), {"reviewed": "1", "go": "next"}
    )
    assert response["Location"] == reverse("review-queue", args=[project.slug])
    client.post(reverse("review-mark", args=[project.slug, s1.pk]), {"reviewed": "0"})
    assert list(SampleReview.objects.values_list("sample_id", flat=True)) == [s2.pk]


@pytest.mark.parametrize("who", ["annotator", "outsider", "anonymous"])
def test_nobody_else_gets_review_pages_or_writes(
    client, project, review_setup, annotators, outsider, who
):
    crits, s1, _ = review_setup
    if who == "annotator":
        client.force_login(annotators[0])
    elif who == "outsider":
        client.force_login(outsider)
    pages = [
        client.get(reverse("review-queue", args=[project.slug])),
        client.get(reverse("review-item", args=[project.slug, s1.pk])),
        client.post(
            decide_url(project, s1),
            {"criterion": crits[0].pk, "action": "discard", "reason": "redundant"},
        ),
        client.post(decide_url(project, s1), {"action": "discard", "reason": "redundant"}),
        client.post(reverse("review-mark", args=[project.slug, s1.pk]), {"reviewed": "1"}),
    ]
    for response in pages:
        if who == "anonymous":
            assert response.status_code == 302 and "/accounts/login/" in response["Location"]
        else:
            assert response.status_code == 403
        # (Not a bare b"s1": the random CSRF token in every page may contain it.)
        assert b"says A" not in response.content
        assert s1.question.encode() not in response.content
    assert not ReviewDecision.objects.exists() and not SampleReview.objects.exists()


def test_get_is_not_allowed_on_write_endpoints(client, project, lead, review_setup):
    _, s1, _ = review_setup
    client.force_login(lead)
    assert client.get(decide_url(project, s1)).status_code == 405
    assert client.get(reverse("review-mark", args=[project.slug, s1.pk])).status_code == 405


def test_samples_of_another_project_are_not_found(client, project, lead, review_setup):
    from annotation.services.projects import project_create

    other = project_create(name="Other", slug="other")
    foreign = make_sample(other, "x1")
    client.force_login(lead)
    assert client.get(reverse("review-item", args=[project.slug, foreign.pk])).status_code == 404
    response = client.post(decide_url(project, foreign), {"action": "keep"})
    assert response.status_code == 404
    assert not ReviewDecision.objects.exists()
