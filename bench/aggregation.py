"""Time the aggregation job and the agreement statistics on a large project in PostgreSQL.

    .venv/bin/python bench/aggregation.py [--samples 100000] [--criteria 5] [--votes 3]
                                          [--annotators 9] [--n-boot 1000] [--first-runs 1]
                                          [--keep]

Builds ``samples`` x ``criteria`` x ``votes`` formal votes (half the samples in each split) with
COPY into a dedicated database ``bench_aggregation_<pid>``, created from the server named by
``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/postgres``) and dropped at the end
unless ``--keep``. Prints seconds for: PostgreSQL streaming the same vote rows out with
``COPY (SELECT ...) TO STDOUT`` (the floor any reader of the votes pays), the aggregation job
(first run: every label created; second run: nothing changed; third run after 1% of the votes
changed; ``--first-runs N`` repeats the first run, each after its own COPY, and prints the
median ratio), parts of a run (storing the dashboard's vote figures, the label counts from the
written labels beside counting them in SQL, the SQL digest of the inputs),
reading the votes (one bytea per column into NumPy), and the agreement statistics alone (point
estimates, then with the sample bootstrap), each also as a ratio to the COPY time.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _server_url() -> str:
    return os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/postgres"


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(_with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(sql)


def _copy_rows(cursor, table: str, columns: list[str], rows) -> None:
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def build(args: argparse.Namespace) -> dict:
    """The project, its users, samples and votes; returns the ids the timings need."""
    from django.contrib.auth.models import User
    from django.db import connection

    from annotation.models import Criterion, Sample, Slot, Vote
    from annotation.services.projects import member_add, project_create

    rng = np.random.default_rng(0)
    project = project_create(name="Bench", slug="bench")
    users = [User.objects.create(username=f"bench{i:02d}") for i in range(args.annotators)]
    for user in users:
        member_add(project=project, user=user)
    splits = ["open_ended", "reasoning"]
    criteria = {
        s: list(
            Criterion.objects.filter(project=project, split=s)
            .order_by("order")
            .values_list("id", flat=True)[: args.criteria]
        )
        for s in splits
    }
    now = datetime.now(UTC)
    n = args.samples
    sample_fields = [f for f in Sample._meta.concrete_fields if not f.primary_key]
    values = {
        "project": project.pk,
        "question": "Describe the image in detail.",
        "image": "",
        "image_web": "",
        "image_width": None,
        "image_height": None,
        "image_sha256": "",
        "response_a": "A first response of moderate length about the picture.",
        "response_b": "A second response, also of moderate length, about the picture.",
        "model_a": "model-a",
        "model_b": "model-b",
        "source": "bench",
        "pair_type": "cross_model",
        "reference_answer": "",
        "is_seed": False,
        "metadata": "{}",
        "status": "active",
        "content_hash": "",
        "created_at": now,
        "updated_at": now,
    }
    start = time.perf_counter()
    with connection.cursor() as cursor:
        raw = cursor.cursor
        columns = [f.column for f in sample_fields]

        def sample_rows():
            for i in range(n):
                row = dict(values, external_id=f"b{i:07d}", split=splits[i % 2])
                yield [row[f.name] for f in sample_fields]

        _copy_rows(raw, Sample._meta.db_table, columns, sample_rows())
        ids = np.array(
            Sample.objects.filter(project=project).order_by("id").values_list("id", flat=True)
        )
        user_ids = np.array([u.pk for u in users])
        k = args.votes
        # Each sample goes to k distinct annotators, who rate all its criteria.
        trio = np.argsort(rng.random((n, args.annotators)), axis=1)[:, :k]
        n_crit = args.criteria
        truth = rng.integers(0, 2, size=(n, n_crit))
        noise = rng.random((n, n_crit, k))
        choice = np.where(
            noise < 0.8, truth[..., None], np.where(noise < 0.87, 2, 1 - truth[..., None])
        )
        labels = np.array(["A", "B", "tie"])[choice]
        crit = np.array([criteria[splits[i % 2]] for i in range(2)])  # (2, n_crit)
        vote_cols = [
            "sample_id",
            "criterion_id",
            "annotator_id",
            "round",
            "choice",
            "rationale",
            "seconds",
            "shown_swapped",
            "unsure",
            "created_at",
            "updated_at",
        ]

        def vote_rows():
            rationale = "Reads the criterion and compares both responses on it."
            for i in range(n):
                sid = int(ids[i])
                crit_ids = crit[i % 2]
                annot = user_ids[trio[i]]
                for j in range(n_crit):
                    cid = int(crit_ids[j])
                    for a in range(k):
                        yield (
                            sid,
                            cid,
                            int(annot[a]),
                            0,
                            labels[i, j, a],
                            rationale,
                            20.0,
                            False,
                            False,
                            now,
                            now,
                        )

        _copy_rows(raw, Vote._meta.db_table, vote_cols, vote_rows())

        def slot_rows():
            # Each sample's k slots held by the annotators who voted on it, done.
            for i in range(n):
                for a in range(k):
                    yield (int(ids[i]), a + 1, int(user_ids[trio[i, a]]), now, None, now, False)

        slot_cols = ["sample_id", "index", "annotator_id", "claimed_at", "lease_expires_at"]
        slot_cols += ["completed_at", "swap_ab"]
        _copy_rows(raw, Slot._meta.db_table, slot_cols, slot_rows())
        cursor.execute(f"ANALYZE {Slot._meta.db_table}")
        cursor.execute(f"ANALYZE {Vote._meta.db_table}")
        cursor.execute(f"ANALYZE {Sample._meta.db_table}")
    n_votes = Vote.objects.count()
    print(
        f"built {n:,} samples x {args.criteria} criteria x {args.votes} votes = {n_votes:,} votes "
        f"in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return {"project": project, "votes": n_votes}


def cpu_seconds() -> tuple[float, int | None]:
    """CPU seconds used so far by this process plus its PostgreSQL backend, and that backend.

    Beside the wall-clock figures: on a shared machine the CPU time of the work stays about the
    same when other processes take the cores. The backend's figure is read from /proc, so only
    for a server on this machine (else this process's alone, and None for the backend).
    """
    from django.db import connection

    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    used = time.process_time()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return used, None
    return used + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), pid


def time_copy_out(project) -> tuple[float, float | None]:
    from django.db import connection

    from annotation.models import Sample, Vote

    sql = (
        f"COPY (SELECT v.id, v.sample_id, v.criterion_id, v.annotator_id, v.choice "
        f"FROM {Vote._meta.db_table} v JOIN {Sample._meta.db_table} s ON s.id = v.sample_id "
        f"WHERE s.project_id = {int(project.pk)} AND NOT s.is_seed AND s.status = 'active' "
        f"AND v.round = 0) TO STDOUT"
    )
    best, best_cpu = float("inf"), float("inf")
    for _ in range(2):  # the first pass also warms the cache, as the job's own read would
        cpu_start, pid = cpu_seconds()
        start = time.perf_counter()
        sink = io.BytesIO()
        with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
            for block in copy:
                sink.write(block)
        best = min(best, time.perf_counter() - start)
        cpu_end, same = cpu_seconds()
        best_cpu = min(best_cpu, cpu_end - cpu_start) if pid and same == pid else None
    cpu = f"  CPU {best_cpu:.2f} s" if best_cpu else ""
    print(f"{'COPY (SELECT votes) TO STDOUT':<52} {best:8.2f} s  ({sink.tell() / 1e6:.0f} MB){cpu}")
    return best, best_cpu


def timed_job(project, label: str, floor: float, floor_cpu: float | None = None) -> dict:
    from aggregation.tasks import aggregate_project
    from core.jobs import job_create
    from core.models import Job

    job = job_create(kind=Job.Kind.AGGREGATE, project=project)
    cpu_start, pid = cpu_seconds()
    start = time.perf_counter()
    aggregate_project.run(job.pk)  # the task body, in this process
    seconds = time.perf_counter() - start
    cpu_end, same = cpu_seconds()
    job.refresh_from_db()
    if job.status != Job.Status.SUCCEEDED:
        raise SystemExit(f"aggregation failed: {job.error}")
    cpu = cpu_end - cpu_start if floor_cpu and pid and same == pid else None
    tail = f"; CPU {cpu:.2f} s = {cpu / floor_cpu:5.1f} x COPY's" if cpu else ""
    print(f"{label:<52} {seconds:8.2f} s  = {seconds / floor:6.1f} x COPY{tail}", flush=True)
    return {**job.result, "_seconds": seconds, "_cpu_ratio": cpu / floor_cpu if cpu else None}


def reset_results(project) -> None:
    """Drop the project's labels and stored figures: the next run is a first run again."""
    from django.db import connection

    from aggregation.models import AgreementSnapshot, CriterionLabel, DashboardSnapshot

    CriterionLabel.objects.filter(sample__project=project).delete()
    AgreementSnapshot.objects.filter(project=project).delete()
    DashboardSnapshot.objects.filter(project=project).delete()
    with connection.cursor() as cursor:  # no dead rows left in the label table's indexes
        cursor.execute(f"VACUUM {CriterionLabel._meta.db_table}")


def time_parts(project, floor: float, n_boot: int) -> None:
    from aggregation import label_counts
    from aggregation.services import aggregate as svc
    from aggregation.services.dashboard import (
        dashboard_labels_refresh,
        dashboard_snapshot_refresh,
    )
    from annotation.models import Criterion
    from core.db import without_jit

    with without_jit():
        start = time.perf_counter()
        dashboard_snapshot_refresh(project=project)
        seconds = time.perf_counter() - start
        name = "  of a run: storing the dashboard's vote figures"
        print(f"{name:<52} {seconds:8.2f} s  = {seconds / floor:6.1f} x COPY", flush=True)
        start = time.perf_counter()
        dashboard_labels_refresh(project=project)
        seconds = time.perf_counter() - start
    name = "  label counts, counted in SQL (before this round)"
    print(f"{name:<52} {seconds:8.2f} s  = {seconds / floor:6.1f} x COPY", flush=True)
    written = {}
    for split in ("open_ended", "reasoning"):
        criteria = list(Criterion.objects.filter(project=project, split=split).order_by("order"))
        with without_jit():
            votes = svc._load_votes(svc._formal_votes(project, split, criteria))
        items = svc._label_items(votes, criteria, project.annotators_per_sample)
        written[split] = items.arrays()
    start = time.perf_counter()
    label_counts.label_figures(written, False)
    seconds = time.perf_counter() - start
    name = "  of a run: label counts from the written labels"
    print(f"{name:<52} {seconds:8.2f} s  = {seconds / floor:6.1f} x COPY", flush=True)
    with without_jit():
        start = time.perf_counter()
        svc._votes_state(project, project.annotators_per_sample, {}, {})
        svc._labels_state(project)
        seconds = time.perf_counter() - start
    name = "  of a run: the digest of the inputs (SQL)"
    print(f"{name:<52} {seconds:8.2f} s  = {seconds / floor:6.1f} x COPY", flush=True)

    for split in ("open_ended", "reasoning"):
        criteria = list(Criterion.objects.filter(project=project, split=split).order_by("order"))
        criteria = [c for c in criteria if svc._formal_votes(project, split, [c]).exists()]
        start = time.perf_counter()
        with without_jit():  # as in the job
            votes = svc._load_votes(svc._formal_votes(project, split, criteria))
        read = time.perf_counter() - start
        start = time.perf_counter()
        items = svc._label_items(votes, criteria, project.annotators_per_sample)
        rule = time.perf_counter() - start
        names = svc._rater_names(votes)
        timings = {}
        for boot in (0, n_boot):
            start = time.perf_counter()
            svc._agreement(
                votes, items, criteria, project.annotators_per_sample, names, n_boot=boot
            )
            timings[boot] = time.perf_counter() - start
        n = len(votes["id"])
        print(f"  {split}: {n:,} votes, {len(items.keys):,} items")
        for name, seconds in (
            ("read votes (one bytea per column into NumPy)", read),
            ("rule and digests per label", rule),
            ("agreement, point estimates", timings[0]),
            (f"agreement with bootstrap ({n_boot} replicates)", timings[n_boot]),
        ):
            print(f"    {name:<48} {seconds:8.2f} s  = {seconds / floor:6.1f} x COPY", flush=True)


def time_floors(project, floor: float, n_boot: int) -> None:
    """What any aggregation that stores its labels and their intervals pays, beside the COPY:
    writing the same label rows with COPY into a table shaped like the label table (its
    indexes and checks, no triggers), and the bootstrap's resampling draws alone."""
    from django.db import connection

    from aggregation.bootstrap import resample_counts
    from aggregation.models import CriterionLabel
    from annotation.models import Sample
    from bench.copy_floor import copy_in_floor

    table = CriterionLabel._meta.db_table
    select = (
        f"SELECT l.* FROM {table} l JOIN {Sample._meta.db_table} s ON s.id = l.sample_id"
        f" WHERE s.project_id = {int(project.pk)}"
    )
    with connection.cursor() as cursor:
        n_labels, write, bare = copy_in_floor(cursor.cursor, table, select)
    n_samples = Sample.objects.filter(project=project, is_seed=False).count()
    draws = []
    for _ in range(3):
        start = time.perf_counter()
        for _split in ("open_ended", "reasoning"):
            resample_counts(np.random.default_rng(0), n_samples // 2, n_boot)
        draws.append(time.perf_counter() - start)
    draw = float(np.median(draws))
    print("floors: what storing the labels and their intervals costs whatever the code")
    for name, seconds in (
        (f"  COPY of the {n_labels:,} labels into a label-shaped table", write),
        ("  the same without its indexes and checks", bare),
        (f"  the bootstrap's draws alone ({n_boot} replicates, 2 splits)", draw),
        ("  with the COPY of the votes: read + write + draws", floor + write + draw),
    ):
        print(f"{name:<52} {seconds:8.2f} s  = {seconds / floor:6.1f} x COPY", flush=True)


def change_votes(project, share: float) -> int:
    from django.db import connection

    from annotation.models import Sample, Vote

    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Vote._meta.db_table} v SET choice = CASE v.choice WHEN 'A' THEN 'B' "
            f"ELSE 'A' END FROM {Sample._meta.db_table} s WHERE s.id = v.sample_id "
            f"AND s.project_id = %s AND v.id %% %s = 0",
            [project.pk, round(1 / share)],
        )
        return cursor.rowcount


def _rounded(values: list[float]) -> list[float]:
    return [round(v, 1) for v in values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--criteria", type=int, default=5)
    parser.add_argument("--votes", type=int, default=3)
    parser.add_argument("--annotators", type=int, default=9)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument(
        "--first-runs", type=int, default=1, help="repeat the first run (each beside its COPY)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    args = parser.parse_args()

    server = _server_url()
    name = f"bench_aggregation_{os.getpid()}"
    _admin(server, f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = _with_database(server, name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.pop("CELERY_BROKER_URL", None)  # the task body runs here, not on a worker
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        call_command("migrate", verbosity=0)
        built = build(args)
        project = built["project"]
        ratios, cpu_ratios = [], []
        for _ in range(args.first_runs):
            reset_results(project)
            floor, floor_cpu = time_copy_out(project)
            label = "aggregation job, first run (creates every label)"
            result = timed_job(project, label, floor, floor_cpu)
            ratios.append(result["_seconds"] / floor)
            cpu_ratios.append(result["_cpu_ratio"])
        if args.first_runs > 1:
            print(f"  first run / COPY: median {np.median(ratios):.1f} x of", _rounded(ratios))
            if None not in cpu_ratios:
                print(f"  CPU: median {np.median(cpu_ratios):.1f} x of", _rounded(cpu_ratios))
        total = sum(s["labels"] for s in result["splits"].values())
        print(f"  {total:,} labels; {result['summary']}")
        timed_job(project, "aggregation job, second run (nothing changed)", floor, floor_cpu)
        changed = change_votes(project, 0.01)
        again = timed_job(
            project, f"aggregation job after {changed:,} votes changed", floor, floor_cpu
        )
        updated = sum(s["updated"] for s in again["splits"].values())
        print(f"  {updated:,} labels updated")
        time_parts(project, floor, args.n_boot)
        time_floors(project, floor, args.n_boot)
        connection.close()
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            _admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        else:
            print(f"kept database {name}")


if __name__ == "__main__":
    main()
