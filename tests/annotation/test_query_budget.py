"""Query budget: a labeling loop (submit + next) takes at most 3 queries in the services and 4
over HTTP (7 when it claims the next batch), at any project size and any history."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.models import Project, ProjectMember, Sample
from annotation.services import voting, work
from annotation.services.projects import project_create
from tests.annotation.work_data import bulk_samples

# The loop that claims the next batch: the steady loop's, then (no open slot left) the member's
# progress, the candidates, the claim and the new open slots.
BUDGET = 7
# Every other loop: criteria, the vote (member lock, checks, insert, slot and counters in one
# statement, committed on its own), and the open slots with their votes and the member's progress.
STEADY_BUDGET = 3
LOOPS = 25  # crosses a batch boundary: 10 samples x 5 criteria = 50 items; start at item 40

# Not wrapped in a test transaction: each service call runs its own transaction as in a request,
# so the count has no test-only SAVEPOINT statements.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
        reason="the budget is asserted on PostgreSQL",
    ),
]


def build(n: int, slug: str) -> Project:
    project = project_create(name=slug, slug=slug)
    bulk_samples(project, n, prefix="q")
    with connection.cursor() as cursor:  # all k slots per sample at INSERT ... SELECT speed
        cursor.execute(
            "INSERT INTO annotation_slot (sample_id, index, swap_ab)"
            " SELECT s.id, g, false FROM annotation_sample s"
            " CROSS JOIN generate_series(1, %s) g WHERE s.project_id = %s",
            [project.annotators_per_sample, project.pk],
        )
        cursor.execute("ANALYZE annotation_sample; ANALYZE annotation_slot;")
    return project


def loop_counts(project: Project, user: User, answer: dict | None = None) -> list[int]:
    """Query counts of LOOPS request-like loops (fresh Project instance, submit then next).

    ``answer`` replaces the pairwise ``shown_choice="A"`` (a graded or pointwise answer).
    """
    answer = answer or {"shown_choice": "A"}
    item = work.work_next(project=project, annotator=user)
    for _ in range(39):  # reach the end of the first batch so the loops include a claim
        voting.vote_submit(
            project=project,
            annotator=user,
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            rationale="Steady rationale for the budget.",
            seconds=2,
            **answer,
        )
        item = work.work_next(project=project, annotator=user)
    counts = []
    for _ in range(LOOPS):
        fresh = Project.objects.get(pk=project.pk)  # as a request loads it
        with CaptureQueriesContext(connection) as captured:
            voting.vote_submit(
                project=fresh,
                annotator=user,
                sample_id=item.sample.pk,
                criterion_id=item.criterion.pk,
                rationale="Steady rationale for the budget.",
                seconds=2,
                **answer,
            )
            item = work.work_next(project=fresh, annotator=user)
        listing = "\n".join(f"{i + 1}. {q['sql'][:300]}" for i, q in enumerate(captured))
        assert len(captured) <= BUDGET, f"{len(captured)} queries:\n{listing}"
        counts.append(len(captured))
        assert item is not None
    return counts


def annotator_for(project: Project, name: str) -> User:
    user = User.objects.create(username=name)
    ProjectMember.objects.create(project=project, user=user, calibrated_at=timezone.now())
    return user


def test_same_budget_at_100_and_100000_samples():
    small = build(100, "small")
    large = build(100_000, "large")
    assert Sample.objects.filter(project=large).count() == 100_000
    small_counts = loop_counts(small, annotator_for(small, "s-user"))
    large_counts = loop_counts(large, annotator_for(large, "l-user"))
    print("queries per loop at 100 samples:", small_counts)
    print("queries per loop at 100,000 samples:", large_counts)
    assert small_counts == large_counts
    assert max(large_counts) <= BUDGET
    assert sum(n > STEADY_BUDGET for n in large_counts) == 1, large_counts
    # the loop that claimed the next batch is in the series and within budget too
    assert len(set(large_counts)) >= 2


def test_tie_loop_within_budget():
    project = build(100, "ties")
    user = annotator_for(project, "t-user")
    for _ in range(10):
        item = work.work_next(project=project, annotator=user)
        voting.vote_submit(
            project=project,
            annotator=user,
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            shown_choice="A",
            rationale="Ten plain votes first.",
            seconds=1,
        )
    item = work.work_next(project=project, annotator=user)
    fresh = Project.objects.get(pk=project.pk)
    with CaptureQueriesContext(connection) as captured:
        vote = voting.vote_submit(
            project=fresh,
            annotator=user,
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            shown_choice="tie",
            rationale="The eleventh may be a tie.",
            seconds=1,
        )
        work.work_next(project=fresh, annotator=user)
    listing = "\n".join(q["sql"][:300] for q in captured)
    assert vote.choice == "tie"
    assert len(captured) <= STEADY_BUDGET, listing  # the tie cap reads the locked counters


@pytest.mark.parametrize(
    ("scale", "answer"),
    [("graded", {"shown_grade": 1}), ("pointwise", {"shown_scores": (4, 2)})],
)
def test_graded_and_pointwise_loops_cost_what_a_pairwise_loop_costs(scale, answer):
    pairwise = build(100, "pairwise-budget")
    scaled = build(100, f"{scale}-budget")
    Project.objects.filter(pk=scaled.pk).update(label_scale=scale)
    scaled.refresh_from_db()
    base = loop_counts(pairwise, annotator_for(pairwise, "p-user"))
    counts = loop_counts(scaled, annotator_for(scaled, "g-user"), answer)
    assert counts == base


# Over HTTP: the session comes from the shared cache (CACHE_URL set, as deployed), then the user
# with their roles, the project with its criteria, the vote in one statement (lock, checks, insert,
# slot and counters), and the open slots with the member's progress.
HTTP_BUDGET = 4


@override_settings(SESSION_ENGINE="django.contrib.sessions.backends.cached_db")
def test_http_loop_within_budget(client):
    """A labeling loop over HTTP (htmx submit answered with the next item) within the budget."""
    from tests.annotation.test_labeling_views import current_ids, submit

    project = build(100, "http")
    user = annotator_for(project, "h-user")
    client.force_login(user)
    page = client.get(reverse("label", args=[project.slug]), HTTP_HX_REQUEST="true")
    counts = []
    for _ in range(12):  # crosses the end of the first batch (10 samples x 5 criteria): no claim
        ids = current_ids(page)
        with CaptureQueriesContext(connection) as captured:
            page = submit(client, project, ids, htmx=True)
        assert page.status_code == 200, page.content
        listing = "\n".join(f"{i + 1}. {q['sql'][:200]}" for i, q in enumerate(captured))
        counts.append(len(captured))
        assert len(captured) <= HTTP_BUDGET, f"{len(captured)} queries:\n{listing}"
        assert "auth_group" not in listing and "django_session" not in listing, listing
    print("HTTP queries per loop:", counts)
