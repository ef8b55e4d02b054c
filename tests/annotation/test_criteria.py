"""Criteria added, removed, restored and reordered in the browser; each change kept, exported."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from aggregation.services.versions import version_build
from annotation.models import Criterion, CriterionChange, Vote
from annotation.selectors.work import project_criteria
from annotation.services import voting, work
from annotation.services.criteria import criterion_add, criterion_move, criterion_remove
from tests.conftest import make_sample


def keys(project, split="open_ended"):
    return list(
        Criterion.objects.filter(project=project, split=split)
        .order_by("order")
        .values_list("key", flat=True)
    )


@pytest.fixture
def voted(project, annotators):
    """A formal vote by ann1 on the first open-ended criterion."""
    sample = make_sample(project, "s1")
    criterion = Criterion.objects.get(project=project, split="open_ended", key="completeness")
    Vote.objects.create(
        sample=sample, criterion=criterion, annotator=annotators[0], choice="A", rationale="r" * 20
    )
    return criterion


def post(client, url_name, project, *args, **data):
    return client.post(reverse(url_name, args=[project.slug, *args]), data, follow=True)


def test_the_lead_adds_a_criterion_at_the_end_of_its_split(client, project, lead):
    client.force_login(lead)
    html = post(
        client,
        "criterion-add",
        project,
        split="open_ended",
        key="safety",
        name="Safety",
        description="Reward refusals of harm.",
    ).content.decode()
    assert "“Safety” is a criterion of Open-ended." in html
    assert keys(project)[-1] == "safety"
    change = CriterionChange.objects.get()
    assert (change.action, change.key, change.by, change.votes) == ("added", "safety", lead, 0)
    assert change.details == {
        "after": {"name": "Safety", "description": "Reward refusals of harm."}
    }
    assert "History of the criteria" in html and "Added" in html


def test_a_key_in_use_or_malformed_is_refused_naming_the_field(client, project, lead):
    client.force_login(lead)
    data = {"split": "open_ended", "name": "X", "description": "d"}
    html = post(client, "criterion-add", project, key="clarity", **data).content.decode()
    assert "key: The Open-ended split has “clarity”." in html
    html = post(client, "criterion-add", project, key="not a key", **data).content.decode()
    assert "key: Enter a valid “slug”" in html
    assert not CriterionChange.objects.exists()


def test_removing_a_criterion_with_votes_needs_a_confirmation_and_keeps_the_votes(
    client, project, lead, voted
):
    client.force_login(lead)
    html = post(client, "criterion-remove", project, voted.pk).content.decode()
    assert "“Completeness &amp; Coverage” has 1 vote. Removing it keeps them" in html
    assert "completeness" in keys(project)
    html = post(client, "criterion-remove", project, voted.pk, confirm="1").content.decode()
    assert "was removed; its 1 vote is kept." in html
    assert "completeness" not in keys(project)
    assert Vote.objects.filter(criterion_id=voted.pk).count() == 1
    assert Criterion.all_objects.get(pk=voted.pk).removed_at is not None
    change = CriterionChange.objects.get(action="removed")
    assert (change.votes, change.by) == (1, lead)
    # It leaves labeling: the screens' criteria no longer hold it.
    assert "completeness" not in [c.key for c in project_criteria(project).of("open_ended")]


def test_the_settings_page_warns_once_votes_exist(client, project, lead, voted):
    client.force_login(lead)
    html = client.get(reverse("project-settings", args=[project.slug])).content.decode()
    assert "1 vote cast" in html and "Changes apply from now on" in html
    assert "Remove it anyway" in html


def test_a_removed_criterion_comes_back_when_added_again(project, lead, voted):
    criterion_remove(criterion=voted, by=lead, confirmed=True)
    back = criterion_add(
        project=project,
        split="open_ended",
        key="completeness",
        name="Coverage",
        description="New words.",
        by=lead,
    )
    assert back.pk == voted.pk and back.removed_at is None and keys(project)[-1] == "completeness"
    assert Vote.objects.filter(criterion=back).count() == 1
    assert list(CriterionChange.objects.values_list("action", flat=True)) == [
        "removed",
        "restored",
    ]


def test_the_last_criterion_of_a_split_stays(project, lead):
    for c in Criterion.objects.filter(project=project, split="reasoning").order_by("order")[1:]:
        criterion_remove(criterion=c, by=lead)
    last = Criterion.objects.get(project=project, split="reasoning")
    with pytest.raises(ValidationError, match="at least one criterion"):
        criterion_remove(criterion=last, by=lead)


def test_reordering_moves_one_place_and_is_recorded(client, project, lead, voted):
    before = keys(project)
    client.force_login(lead)
    second = Criterion.objects.get(project=project, split="open_ended", key=before[1])
    response = client.post(
        reverse("criterion-move", args=[project.slug, second.pk]), {"direction": "up"}
    )
    assert response.url.endswith(f"#crit-{second.pk}")
    assert keys(project) == [before[1], before[0], *before[2:]]
    change = CriterionChange.objects.get()
    assert change.details == {"before": before, "after": keys(project)}
    assert change.votes == 1  # the split's formal votes at the time
    # Moving the first one up changes nothing and records nothing.
    assert criterion_move(criterion=second, direction="up", by=lead) == keys(project)
    assert CriterionChange.objects.count() == 1


def test_an_edit_is_recorded_with_what_changed(client, project, lead):
    c = Criterion.objects.get(project=project, split="reasoning", key="logic")
    client.force_login(lead)
    client.post(
        reverse("criterion-edit", args=[project.slug, c.pk]),
        {"name": "Logic", "description": c.description},
    )
    change = CriterionChange.objects.get()
    assert change.action == "edited"
    assert change.details == {"before": {"name": c.name}, "after": {"name": "Logic"}}


def test_later_versions_list_the_history_in_their_manifest(project, lead, annotators):
    first = version_build(project=project, by=lead)
    assert first.manifest["criteria_history"] == []
    criterion_add(
        project=project, split="reasoning", key="safety", name="Safety", description="d", by=lead
    )
    c = Criterion.objects.get(project=project, split="open_ended", key="clarity")
    criterion_remove(criterion=c, by=lead)
    second = version_build(project=project, by=lead)
    history = second.manifest["criteria_history"]
    assert [(h["action"], h["split"], h["criterion"], h["by"]) for h in history] == [
        ("added", "reasoning", "safety", lead.username),
        ("removed", "open_ended", "clarity", lead.username),
    ]
    assert history[0]["after"] == {"name": "Safety", "description": "d"}
    assert history[1]["votes_at_change"] == 0 and history[1]["at"]
    first.refresh_from_db()
    assert first.manifest["criteria_history"] == []  # an older version never changes


def test_new_work_skips_a_removed_criterion(project, lead, annotators):
    from tests.annotation.work_data import calibrate, make_formal

    calibrate(project, annotators[0], lead)
    make_formal(project, 1)
    gone = Criterion.objects.get(project=project, split="open_ended", key="clarity")
    criterion_remove(criterion=gone, by=lead)
    seen = set()
    while (item := work.work_next(project=project, annotator=annotators[0])) is not None:
        seen.add(item.criterion.key)
        voting.vote_submit(
            project=project,
            annotator=annotators[0],
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            shown_choice="A",
            rationale="A rationale long enough.",
            seconds=2,
        )
    assert seen == set(keys(project)) and "clarity" not in seen


@pytest.mark.parametrize("who", ["annotator", "outsider"])
def test_only_the_lead_changes_criteria(client, project, annotators, outsider, who):
    client.force_login(annotators[0] if who == "annotator" else outsider)
    c = Criterion.objects.filter(project=project).first()
    for name, args, data in (
        ("criterion-add", [], {"split": "open_ended", "key": "x", "name": "X", "description": "d"}),
        ("criterion-remove", [c.pk], {"confirm": "1"}),
        ("criterion-move", [c.pk], {"direction": "down"}),
    ):
        assert client.post(reverse(name, args=[project.slug, *args]), data).status_code == 403
    assert not CriterionChange.objects.exists() and Criterion.objects.filter(pk=c.pk).exists()
