"""Graded and pointwise votes: field errors, swapped screens, the tie cap, the screen itself."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation.models import Slot, Vote
from annotation.services import voting, work, work_types
from annotation.services.projects import member_add

from .work_data import GOOD, calibrate, make_formal

pytestmark = pytest.mark.django_db


@pytest.fixture
def scaled(request, project, annotator, lead):
    project.label_scale = request.param
    project.shuffle_ab = False
    project.save()
    make_formal(project, 3)
    member_add(project=project, user=annotator)
    calibrate(project, annotator, lead)
    return project


def submit(project, user, item, **answer):
    return voting.vote_submit(
        project=project,
        annotator=user,
        sample_id=item.sample.pk,
        criterion_id=item.criterion.pk,
        rationale=GOOD,
        seconds=2.0,
        **answer,
    )


@pytest.mark.parametrize("scaled", ["graded"], indirect=True)
@pytest.mark.parametrize(
    ("grade", "message"),
    [(None, "five grades"), ("3", "five grades"), ("x", "five grades"), ("-3", "five grades")],
)
def test_graded_vote_needs_a_grade_from_minus_2_to_2(scaled, annotator, grade, message):
    item = work.work_next(project=scaled, annotator=annotator)
    with pytest.raises(work_types.VoteRejected) as refused:
        submit(scaled, annotator, item, shown_grade=grade, shown_choice="A")
    assert refused.value.field == "grade" and message in refused.value.message
    assert not Vote.objects.exists()


@pytest.mark.parametrize("scaled", ["pointwise"], indirect=True)
@pytest.mark.parametrize(
    ("scores", "field"),
    [
        (None, "score_left"),
        (("6", "2"), "score_left"),
        (("3", "0"), "score_right"),
        (("4", ""), "score_right"),
    ],
)
def test_pointwise_vote_needs_two_scores_from_1_to_5(scaled, annotator, scores, field):
    item = work.work_next(project=scaled, annotator=annotator)
    with pytest.raises(work_types.VoteRejected) as refused:
        submit(scaled, annotator, item, shown_scores=scores)
    assert refused.value.field == field
    assert "from 1 to 5" in refused.value.message
    assert not Vote.objects.exists()


@pytest.mark.parametrize("scaled", ["graded"], indirect=True)
def test_swapped_screen_stores_the_grade_canonical(scaled, annotator):
    item = work.work_next(project=scaled, annotator=annotator)
    Slot.objects.filter(sample=item.sample, annotator=annotator).update(swap_ab=True)
    vote = submit(scaled, annotator, item, shown_grade="2")  # left (= B) much better
    assert (vote.grade, vote.choice, vote.shown_swapped) == (-2, "B", True)
    vote = submit(scaled, annotator, item, shown_grade="-1")
    assert (vote.grade, vote.choice) == (1, "A")


@pytest.mark.parametrize("scaled", ["pointwise"], indirect=True)
def test_swapped_screen_stores_the_scores_canonical(scaled, annotator):
    item = work.work_next(project=scaled, annotator=annotator)
    Slot.objects.filter(sample=item.sample, annotator=annotator).update(swap_ab=True)
    vote = submit(scaled, annotator, item, shown_scores=("5", "2"))  # left is response B
    assert (vote.score_a, vote.score_b, vote.choice) == (2, 5, "B")


@pytest.mark.parametrize("scaled", ["graded", "pointwise"], indirect=True)
def test_tie_cap_applies_to_the_derived_tie(scaled, annotator):
    scaled.tie_cap = Decimal("0.000")
    scaled.save()
    item = work.work_next(project=scaled, annotator=annotator)
    tie = {"shown_grade": "0"} if scaled.label_scale == "graded" else {"shown_scores": ("3", "3")}
    with pytest.raises(work_types.VoteRejected) as refused:
        submit(scaled, annotator, item, **tie)
    assert refused.value.field == "choice"
    assert "No tie available" in refused.value.message
    advice = "a grade for A or for B" if scaled.label_scale == "graded" else "different scores"
    assert advice in refused.value.message
    assert not Vote.objects.exists()
    # A non-tie answer goes through.
    other = {"shown_grade": "1"} if scaled.label_scale == "graded" else {"shown_scores": ("4", "3")}
    assert submit(scaled, annotator, item, **other).choice == "A"


@pytest.mark.parametrize("scaled", ["graded"], indirect=True)
def test_graded_screen_has_five_buttons_keys_and_tie_off_with_reason(client, scaled, annotator):
    scaled.tie_cap = Decimal("0.000")
    scaled.save()
    client.force_login(annotator)
    html = client.get(f"/projects/{scaled.slug}/label/").content.decode()
    assert 'data-scale="graded"' in html
    for label in ("A≫B", "A&gt;B", "B&gt;A", "B≫A"):
        assert label in html
    assert html.count('name="grade"') == 5
    assert 'name="grade" value="0" disabled' in html  # the middle grade is the tie
    assert 'id="tie-reason"' in html and "No ties in this project" in html
    assert "<td>choose A≫B</td>" in html  # the shortcuts list names the five keys


@pytest.mark.parametrize("scaled", ["pointwise"], indirect=True)
def test_pointwise_screen_shows_two_rows_and_the_rubric(client, scaled, annotator):
    client.force_login(annotator)
    item = work.work_next(project=scaled, annotator=annotator)
    item.criterion.rubric = {str(s): f"Level {s} text" for s in range(1, 6)}
    item.criterion.save()
    html = client.get(f"/projects/{scaled.slug}/label/").content.decode()
    assert html.count('name="score_left"') == 5 and html.count('name="score_right"') == 5
    for s in range(1, 6):
        assert f"Level {s} text" in html
    assert "score Response B (right) 1 to 5" in html
    guidelines = client.get(f"/projects/{scaled.slug}/guidelines/").content.decode()
    assert "Level 4 text" in guidelines and "Score each response from 1 to 5" in guidelines


@pytest.mark.parametrize("scaled", ["pointwise"], indirect=True)
def test_refused_pointwise_vote_comes_back_with_the_error_and_typed_scores(
    client, scaled, annotator
):
    client.force_login(annotator)
    item = work.work_next(project=scaled, annotator=annotator)
    response = client.post(
        f"/projects/{scaled.slug}/label/",
        {
            "sample_id": item.sample.pk,
            "criterion_id": item.criterion.pk,
            "score_left": "4",
            "rationale": GOOD,
        },
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert 'id="score_right-error"' in html and "Score Response B from 1 to 5." in html
    assert 'name="score_left" value="4" data-key="4" checked' in html
    assert not Vote.objects.exists()


@pytest.mark.parametrize("scaled", ["graded"], indirect=True)
def test_revisiting_a_graded_vote_shows_it_in_screen_terms(client, scaled, annotator):
    item = work.work_next(project=scaled, annotator=annotator)
    Slot.objects.filter(sample=item.sample, annotator=annotator).update(swap_ab=True)
    submit(scaled, annotator, item, shown_grade="1")
    client.force_login(annotator)
    html = client.get(
        f"/projects/{scaled.slug}/label/{item.sample.pk}/{item.criterion.pk}/"
    ).content.decode()
    assert 'name="grade" value="1" checked' in html


@pytest.mark.parametrize("scaled", ["graded", "pointwise"], indirect=True)
def test_home_lists_the_vote_as_the_annotator_saw_it(client, scaled, annotator):
    item = work.work_next(project=scaled, annotator=annotator)
    Slot.objects.filter(sample=item.sample, annotator=annotator).update(swap_ab=True)
    answer = (
        {"shown_grade": "2"} if scaled.label_scale == "graded" else {"shown_scores": ("5", "1")}
    )
    vote = submit(scaled, annotator, item, **answer)
    assert vote.choice == "B"  # the left response was B
    client.force_login(annotator)
    html = client.get("/").content.decode()
    shown = "A≫B" if scaled.label_scale == "graded" else "A 5 · B 1"
    assert f'<span class="answer">{shown}</span>' in html
