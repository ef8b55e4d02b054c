"""Time the lead's dashboard and review-queue reads on a large project (default 20,000 samples).

    DATABASE_URL=postgres://... .venv/bin/python bench/dashboard.py [--samples N] [--keep]
    DATABASE_URL=postgres://... .venv/bin/python bench/dashboard.py --project SLUG [--repeat R]

Builds N open-ended samples x 5 criteria x 3 formal votes (plus slots and aggregated labels) in
a fresh project of the database named by DATABASE_URL (use a scratch database), then prints the
seconds and the number of SQL queries of: the dashboard figures with nothing stored, storing
them (the aggregation job's part), the dashboard with the stored figures and again after 1% new
votes, storing the review queue's figures (also the job's part), a review-queue page as the
view reads it (counts, then rows: page 1 and by id in the middle), the queue counts from the
stored figures beside the same counted live (what every page did before), unfiltered and
under five filter mixes, and one item's next / previous and position beside the same counted.
One sample in ten is marked reviewed, one in a hundred flagged. The project is deleted
afterwards unless --keep; --project times a project kept by an earlier run instead of building
one (the study's design size, --samples 100000, takes minutes to build), --repeat times the
dashboard and the counts R times. Adding the new votes changes a kept project (a
criterion "extra..." with 1% votes).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import Count, Exists, OuterRef, Q  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from aggregation.models import (  # noqa: E402
    CriterionLabel,
    DashboardSnapshot,
    Outcome,
    ReviewQueueCell,
    ReviewQueueFigures,
    SampleReview,
)
from aggregation.selectors.dashboard import dashboard_figures  # noqa: E402
from aggregation.selectors.review_queue import (  # noqa: E402
    QueueFilters,
    review_counts,
    review_neighbours,
    review_next_id,
    review_page,
    review_queue,
)
from aggregation.services.dashboard import (  # noqa: E402
    dashboard_labels_refresh,
    dashboard_snapshot_refresh,
)
from aggregation.services.review import review_figures_refresh  # noqa: E402
from annotation.models import (  # noqa: E402
    Criterion,
    ProblemReport,
    Project,
    Sample,
    Slot,
    Split,
    Vote,
)
from annotation.services.projects import member_add, project_create  # noqa: E402

BATCH = 5000


def build(n_samples: int, rng: random.Random) -> Project:
    slug = f"bench-dashboard-{int(time.time())}"
    project = project_create(name="Dashboard benchmark", slug=slug)
    users = [User.objects.get_or_create(username=f"bench-ann{i}")[0] for i in range(1, 10)]
    for user in users:
        member_add(project=project, user=user)
    criteria = list(Criterion.objects.filter(project=project, split="open_ended"))
    samples = Sample.objects.bulk_create(
        [
            Sample(
                project=project,
                external_id=f"b{i:07d}",
                split="open_ended",
                question="q",
                response_a="a",
                response_b="b",
            )
            for i in range(n_samples)
        ],
        batch_size=BATCH,
    )
    slots, votes, labels = [], [], []
    now = timezone.now()
    for sample in samples:
        raters = rng.sample(users, 3)
        slots.extend(
            Slot(sample=sample, index=i, annotator=u) for i, u in enumerate(raters, start=1)
        )
        for criterion in criteria:
            choices = [rng.choice("AAB") if rng.random() > 0.07 else "tie" for _ in raters]
            votes.extend(
                Vote(
                    sample=sample,
                    criterion=criterion,
                    annotator=u,
                    choice=c,
                    rationale="r",
                    seconds=rng.uniform(5, 90),
                )
                for u, c in zip(raters, choices, strict=True)
            )
            if len(set(choices)) == 1 and choices[0] != "tie":
                outcome, pref = Outcome.KEPT_UNANIMOUS, choices[0]
            elif choices.count("tie") == 1 and len(set(choices)) == 2:
                outcome = Outcome.KEPT_MAJORITY_TIE
                pref = next(c for c in choices if c != "tie")
            elif choices.count("tie") >= 2:
                outcome, pref = Outcome.DROPPED_TIES, ""
            else:
                outcome, pref = Outcome.DROPPED_SPLIT, ""
            labels.append(
                CriterionLabel(
                    sample=sample,
                    criterion=criterion,
                    outcome=outcome,
                    preference=pref,
                    computed_at=now,
                )
            )
        if len(votes) >= 4 * BATCH:
            Slot.objects.bulk_create(slots, batch_size=BATCH)
            Vote.objects.bulk_create(votes, batch_size=BATCH)
            CriterionLabel.objects.bulk_create(labels, batch_size=BATCH)
            slots, votes, labels = [], [], []
    Slot.objects.bulk_create(slots, batch_size=BATCH)
    Vote.objects.bulk_create(votes, batch_size=BATCH)
    CriterionLabel.objects.bulk_create(labels, batch_size=BATCH)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return project


def add_votes(project: Project, n: int, rng: random.Random) -> int:
    """Votes cast after the stored figures: one more criterion on ``n`` samples, 3 votes each."""
    users = list(User.objects.filter(username__startswith="bench-ann"))
    extra = Criterion.objects.create(
        project=project,
        split="open_ended",
        key=f"extra{int(time.time())}",
        name="Extra",
        order=99,
        description="An extra criterion.",
    )
    samples = list(Sample.objects.filter(project=project).order_by("id")[:n])
    votes = [
        Vote(sample=s, criterion=extra, annotator=u, choice="A", rationale="r", seconds=10.0)
        for s in samples
        for u in rng.sample(users, 3)
    ]
    Vote.objects.bulk_create(votes, batch_size=BATCH)
    return len(votes)


def queue_view(filters: QueueFilters, after: int | None = None):
    """What the review-queue page reads: the counts, then one page of rows (by id)."""
    project = queue_view.project
    counts = review_counts(project=project, filters=filters)
    return review_page(project=project, filters=filters, counts=counts, after=after)


def copy_samples(project: Project, copies: int) -> None:
    """Copy the project's samples with their labels ``copies`` times over in SQL (no votes).

    Makes the study's design size (100,000 samples) in well under the minutes building its
    votes takes; the dashboard's vote figures then cover only the first samples.
    """
    if copies < 2:
        return
    sample_cols = [f.column for f in Sample._meta.concrete_fields if f.column != "id"]
    label_cols = [
        f.column
        for f in CriterionLabel._meta.concrete_fields
        if f.column not in ("id", "sample_id")
    ]
    picked = ["s.external_id || '-c' || n" if c == "external_id" else f"s.{c}" for c in sample_cols]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {Sample._meta.db_table} ({', '.join(sample_cols)}) "
            f"SELECT {', '.join(picked)} FROM {Sample._meta.db_table} s, "
            "generate_series(2, %s) n WHERE s.project_id = %s ORDER BY n, s.id",
            [copies, project.pk],
        )
        cursor.execute(
            f"INSERT INTO {CriterionLabel._meta.db_table} (sample_id, {', '.join(label_cols)}) "
            f"SELECT c.id, {', '.join('l.' + col for col in label_cols)} "
            f"FROM {CriterionLabel._meta.db_table} l "
            f"JOIN {Sample._meta.db_table} s ON s.id = l.sample_id "
            "CROSS JOIN generate_series(2, %s) n "
            f"JOIN {Sample._meta.db_table} c ON c.project_id = s.project_id "
            "AND c.external_id = s.external_id || '-c' || n "
            "WHERE s.project_id = %s AND s.external_id NOT LIKE '%%-c%%'",
            [copies, project.pk],
        )
        cursor.execute("ANALYZE")


def mark_reviewed(project: Project) -> None:
    """One sample in ten of the queue marked reviewed by the lead (as a kept project would be)."""
    if SampleReview.objects.filter(sample__project=project).exists():
        return
    lead = User.objects.get_or_create(username="bench-lead")[0]
    now = timezone.now()
    ids = review_queue(project=project).values_list("id", flat=True)[::10]
    SampleReview.objects.bulk_create(
        [SampleReview(sample_id=i, reviewed_by=lead, reviewed_at=now) for i in ids],
        batch_size=BATCH,
    )


def live_counts(project: Project, filters: QueueFilters | None = None) -> dict[str, int]:
    """The counts as every page counted them before the stored figures (the queue, live)."""
    reviewed = Exists(SampleReview.objects.filter(sample=OuterRef("pk")))
    return review_queue(project=project, filters=filters).aggregate(
        total=Count("id"), reviewed=Count("id", filter=Q(reviewed))
    )


def live_neighbours(project: Project, filters: QueueFilters, sample_id: int) -> dict[str, int]:
    """An item's next / previous and position as the item page read them before (counted)."""
    queue = review_queue(project=project, filters=filters)
    prev_id = queue.filter(id__lt=sample_id).order_by("-id").values_list("id", flat=True).first()
    next_id = queue.filter(id__gt=sample_id).values_list("id", flat=True).first()
    counts = queue.aggregate(total=Count("id"), before=Count("id", filter=Q(id__lt=sample_id)))
    return {"prev_id": prev_id, "next_id": next_id, **counts}


def flag(project: Project, every: int = 100) -> None:
    """A problem report on one sample in ``every`` (the "flagged" filter)."""
    if ProblemReport.objects.filter(sample__project=project).exists():
        return
    reporter = User.objects.get_or_create(username="bench-ann1")[0]
    ids = Sample.objects.filter(project=project).order_by("id").values_list("id", flat=True)
    ProblemReport.objects.bulk_create(
        [ProblemReport(sample_id=i, reporter=reporter, kind="unreadable") for i in ids[::every]],
        batch_size=BATCH,
    )


def timed(label: str, fn) -> None:
    with CaptureQueriesContext(connection) as ctx:
        start = time.perf_counter()
        fn()
        seconds = time.perf_counter() - start
    print(f"{label:<34} {seconds:8.3f} s  {len(ctx.captured_queries):3d} queries")
    slowest = sorted(ctx.captured_queries, key=lambda q: -float(q["time"]))[:3]
    for query in slowest:
        print(f"    {float(query['time']):7.3f} s  {' '.join(query['sql'].split())[:90]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--project", help="slug of a project kept by an earlier run")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--copies", type=int, default=1, help="copy the built samples and labels C times in SQL"
    )
    args = parser.parse_args()
    rng = random.Random(0)
    start = time.perf_counter()
    if args.project:
        project = Project.objects.get(slug=args.project)
        args.keep = True
    else:
        project = build(args.samples, rng)
        copy_samples(project, args.copies)
        # The steady state autovacuum keeps: visibility maps set, so index-only scans stay so.
        with connection.cursor() as cursor:
            for model in (Sample, CriterionLabel, Vote, Slot):
                cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    n_samples = Sample.objects.filter(project=project).count()
    n_votes = Vote.objects.filter(sample__project=project).count()
    print(
        f"{'reused' if args.project else 'built'} {project.slug}: {n_samples:,} samples,"
        f" {n_votes:,} votes in {time.perf_counter() - start:.1f} s ({connection.vendor})"
    )
    middle = review_queue(project=project).values_list("id", flat=True)[n_samples // 4]
    queue_view.project = project
    filters = QueueFilters(disagreements=True, unreviewed=True)
    try:
        DashboardSnapshot.objects.filter(project=project).delete()
        timed("dashboard figures, nothing stored", lambda: dashboard_figures(project=project))
        timed(
            "storing the figures (aggregation job)",
            lambda: (
                dashboard_snapshot_refresh(project=project),
                dashboard_labels_refresh(project=project),
            ),
        )
        for _ in range(args.repeat):
            timed("dashboard figures", lambda: dashboard_figures(project=project))
        added = add_votes(project, n_samples // 100, rng)
        timed(
            f"dashboard figures, {added:,} votes since",
            lambda: dashboard_figures(project=project),
        )
        mark_reviewed(project)
        flag(project)
        ReviewQueueFigures.objects.filter(project=project).delete()
        ReviewQueueCell.objects.filter(project=project).delete()
        timed(
            "storing the review-queue figures and cells",
            lambda: [review_figures_refresh(project=project, split=s) for s in Split.values],
        )
        timed(
            "counting the queue per split (before)",
            lambda: [live_counts(project, QueueFilters(split=s)) for s in Split.values],
        )
        stored = review_counts(project=project)
        live = live_counts(project)
        assert (stored["total"], stored["reviewed"]) == (live["total"], live["reviewed"])
        print(f"review queue: {live['total']:,} samples, {live['reviewed']:,} reviewed")
        for _ in range(args.repeat):
            timed("review counts, stored (no filter)", lambda: review_counts(project=project))
            timed("review counts, live (before)", lambda: live_counts(project))
        criterion = Criterion.objects.filter(project=project).order_by("id").first()
        mixes = {
            "disagreements, not yet reviewed": filters,
            "kind unanimous": QueueFilters(kind="unanimous"),
            "criterion + majority + tie": QueueFilters(criterion=criterion.pk, kind="majority_tie"),
            "provenance human, split": QueueFilters(provenance="human", split="open_ended"),
            "flagged (live, from reports)": QueueFilters(flagged=True),
        }
        for name, queue_filters in mixes.items():
            base = replace(queue_filters, unreviewed=False)
            stored, live = review_counts(project=project, filters=base), live_counts(project, base)
            assert (stored["total"], stored["reviewed"]) == (live["total"], live["reviewed"])
            for _ in range(args.repeat):
                timed(
                    f"counts, stored: {name}",
                    lambda f=base: review_counts(project=project, filters=f),
                )
                timed(f"counts, live (before): {name}", lambda f=base: live_counts(project, f))
        for name, queue_filters in (("no filter", QueueFilters()), ("filtered", filters)):
            timed(f"review queue page 1 ({name})", lambda f=queue_filters: queue_view(f))
            timed(
                f"review queue page by id ({name})",
                lambda f=queue_filters: queue_view(f, after=middle),
            )
        for name, queue_filters in (("no filter", QueueFilters()), ("filtered", filters)):
            # An item of the filtered queue, a quarter of the way in.
            item = review_next_id(project=project, filters=queue_filters, sample_id=middle - 1)
            nav = review_neighbours(project=project, filters=queue_filters, sample_id=item)
            old = live_neighbours(project, queue_filters, item)
            assert (nav["prev_id"], nav["next_id"], nav["total"]) == (
                old["prev_id"],
                old["next_id"],
                old["total"],
            )
            assert nav["position"] in (None, old["before"] + 1)
            print(f"item {item} ({name}): position {nav['position']} of {nav['total']:,}")
            for _ in range(args.repeat):
                timed(
                    f"item nav, position budgeted ({name})",
                    lambda f=queue_filters, i=item: review_neighbours(
                        project=project, filters=f, sample_id=i
                    ),
                )
                timed(
                    f"item nav, position counted ({name})",
                    lambda f=queue_filters, i=item: review_neighbours(
                        project=project, filters=f, sample_id=i, position_budget_ms=None
                    ),
                )
                timed(
                    f"item nav, live (before) ({name})",
                    lambda f=queue_filters, i=item: live_neighbours(project, f, i),
                )
    finally:
        if not args.keep:
            Project.objects.filter(pk=project.pk).delete()


if __name__ == "__main__":
    main()
