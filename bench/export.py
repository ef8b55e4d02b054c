"""Time a dataset version build and measure its memory for 10,000 and 100,000 samples.

    .venv/bin/python bench/export.py [--sizes 10000 100000] [--criteria 5] [--repeat 3]
        [--no-trace] [--keep]

Creates a dedicated database ``bench_export_<pid>`` on the server named by ``DATABASE_URL``
(default ``postgres://postgres@127.0.0.1:5432/postgres``), migrates it and fills one project per
size with COPY: half the samples in each split, ``criteria`` labels per sample (70% kept, the
rest dropped), small generated PNG images (64 distinct files, 24x24). The database is dropped at
the end unless ``--keep``.

For each size it prints: PostgreSQL streaming the same rows out with ``COPY (SELECT ...) TO
STDOUT`` (the floor any export pays), the full version build (JSONL, zip with images, Parquet
with embedded images, manifest, frozen DatasetRow records) in a fresh process, its peak resident
memory (ru_maxrss of that process, and above a process that only loaded Django and the export
code), and, unless ``--no-trace``, the peak of Python allocations under tracemalloc (a second
build, since tracing slows it down). With ``--repeat N`` the COPY and the build alternate N times
(a fresh process each): the figures are medians, and the ratio's range across the rounds is
printed too (on a shared machine one round says little).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

N_IMAGES = 64


def _server_url() -> str:
    return os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/postgres"


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(_with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(sql)


def _django(db_url: str, media: str) -> None:
    os.environ["DATABASE_URL"] = db_url
    os.environ["MEDIA_ROOT"] = media
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # DEBUG off, as deployed: with it on, Django keeps every query's SQL in memory.
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-deployment")
    import django

    django.setup()


# --- phases run in child processes ----------------------------------------------------------


def phase_setup(args: argparse.Namespace) -> dict:
    """Migrate, write the images, and fill one project per size with COPY."""
    from datetime import UTC, datetime

    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.db import connection
    from PIL import Image

    call_command("migrate", verbosity=0)
    from annotation.models import Criterion
    from annotation.services.projects import project_create
    from core.permissions import LEAD_GROUP

    lead = User.objects.create(username="bench-lead")
    lead.groups.add(Group.objects.get_or_create(name=LEAD_GROUP)[0])
    media = Path(args.media)
    (media / "bench").mkdir(parents=True, exist_ok=True)
    image_names = []
    for i in range(N_IMAGES):
        name = f"bench/img_{i:02d}.png"
        Image.new("RGB", (24, 24), ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256)).save(
            media / name
        )
        image_names.append(name)
    now = datetime.now(UTC)
    out = {}
    for size in args.sizes:
        project = project_create(name=f"Bench {size}", slug=f"bench-{size}")
        criteria = {
            split: list(
                Criterion.objects.filter(project=project, split=split)
                .order_by("order")
                .values_list("id", flat=True)[: args.criteria]
            )
            for split in ("open_ended", "reasoning")
        }
        columns = [
            "project_id", "external_id", "split", "question", "image", "image_web",
            "image_sha256", "response_a", "response_b", "model_a", "model_b", "source",
            "pair_type", "reference_answer", "is_seed", "metadata", "status", "content_hash",
            "created_at", "updated_at",
        ]  # fmt: skip
        started = time.perf_counter()
        with connection.cursor() as cursor:
            raw = cursor.cursor
            with raw.copy(f"COPY annotation_sample ({', '.join(columns)}) FROM STDIN") as copy:
                for i in range(size):
                    split = "open_ended" if i % 2 == 0 else "reasoning"
                    copy.write_row(
                        (
                            project.pk, f"s{i:07d}", split,
                            f"Question {i}: what does the image show, and why? " * 3,
                            image_names[i % N_IMAGES], "", "",
                            f"Response A to question {i}. " * 20,
                            f"Response B to question {i}, a little longer. " * 20,
                            f"model-{i % 7}", f"model-{(i + 3) % 7}", "bench", "cross_model",
                            "", False, "{}", "active", "", now, now,
                        )
                    )  # fmt: skip
            raw.execute(
                "SELECT id, split FROM annotation_sample WHERE project_id = %s ORDER BY id",
                [project.pk],
            )
            samples = raw.fetchall()
            label_cols = [
                "sample_id", "criterion_id", "outcome", "preference", "votes_a", "votes_b",
                "votes_tie", "vote_ids", "computed_at",
            ]  # fmt: skip
            kept = 0
            with raw.copy(
                f"COPY aggregation_criterionlabel ({', '.join(label_cols)}) FROM STDIN"
            ) as copy:
                for n, (sample_id, split) in enumerate(samples):
                    for j, criterion_id in enumerate(criteria[split]):
                        code = (n * 7 + j * 3) % 10
                        if code < 7:
                            kept += 1
                            pref = "A" if (n + j) % 3 else "B"
                            outcome = "kept_unanimous" if code < 5 else "kept_majority_tie"
                            row = (sample_id, criterion_id, outcome, pref, 3, 0, 0, "[]", now)
                        else:
                            row = (sample_id, criterion_id, "dropped_split", "", 2, 1, 0, "[]", now)
                        copy.write_row(row)
            raw.execute("ANALYZE")
        out[size] = {"kept_rows": kept, "fill_s": round(time.perf_counter() - started, 2)}
    return out


def phase_idle(args: argparse.Namespace) -> dict:
    """Load Django and the export code, nothing else: the baseline resident memory."""
    import pyarrow as pa

    from aggregation.services import versions  # noqa: F401

    pa.array(["x"])  # pyarrow loads pandas on its first array: count that in the baseline
    return {}


def _backend_cpu(pid: int) -> float | None:
    """CPU seconds a PostgreSQL backend used so far (its /proc entry), None if unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def phase_export(args: argparse.Namespace) -> dict:
    from django.contrib.auth.models import User

    from aggregation.export.writers import JSONL_DEFLATE_LEVEL
    from aggregation.services.versions import version_build
    from annotation.models import Project

    project = Project.objects.get(slug=f"bench-{args.size}")
    lead = User.objects.get(username="bench-lead")
    if args.trace:
        import tracemalloc

        import pyarrow as pa

        pa.array(["x"])  # load pandas (pyarrow does on its first array) before tracing
        tracemalloc.start()
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    server_started = _backend_cpu(backend)
    started, cpu_started = time.perf_counter(), time.process_time()
    version = version_build(project=project, by=lead)
    seconds = time.perf_counter() - started
    server_done = _backend_cpu(backend)
    result = {
        "seconds": round(seconds, 2),
        # The build process's own CPU time: steadier than wall time on a busy machine.
        "cpu": round(time.process_time() - cpu_started, 2),
        # Its server backend's CPU time (None when the server runs elsewhere).
        "server_cpu": None
        if server_started is None or server_done is None
        else round(server_done - server_started, 2),
        "rows": version.row_count,
        "files": {f.kind: f.size for f in version.files.all()},
        "deflate_level": JSONL_DEFLATE_LEVEL,
    }
    if args.trace:
        import tracemalloc

        result["traced_peak"] = tracemalloc.get_traced_memory()[1]
    return result


def copy_time(db_url: str, size: int) -> tuple[float, float | None]:
    """Seconds for PostgreSQL to stream the exported rows of one project out with COPY, and the
    CPU seconds of its backend and of this process meanwhile (None if unreadable)."""
    import psycopg

    query = """
        COPY (
            SELECT s.external_id || '__' || c.key, s.external_id, s.split, c.key, s.question,
                   s.image, s.response_a, s.response_b, s.model_a, s.model_b,
                   CASE l.preference WHEN 'A' THEN 'model_a' ELSE 'model_b' END
            FROM aggregation_criterionlabel l
            JOIN annotation_sample s ON s.id = l.sample_id
            JOIN annotation_criterion c ON c.id = l.criterion_id
            JOIN annotation_project p ON p.id = s.project_id
            WHERE p.slug = %s AND l.outcome IN ('kept_unanimous', 'kept_majority_tie')
              AND NOT s.is_seed AND s.status = 'active'
            ORDER BY s.split, s.external_id, c."order", c.key
        ) TO STDOUT
    """
    with psycopg.connect(db_url) as conn, conn.cursor() as cursor:
        backend = conn.info.backend_pid
        server_started, cpu_started = _backend_cpu(backend), time.process_time()
        started = time.perf_counter()
        total = 0
        with cursor.copy(psycopg.sql.SQL(query).format(), [f"bench-{size}"]) as copy:
            for block in copy:
                total += len(block)
        seconds = time.perf_counter() - started
        server_done = _backend_cpu(backend)
        if server_started is None or server_done is None:
            return seconds, None
        return seconds, server_done - server_started + time.process_time() - cpu_started


def floors(db_url: str, size: int, level: int) -> dict[str, float]:
    """What any build of the newest version of one size pays whatever its code: its frozen rows
    written with COPY into a table shaped like DatasetRow's (with and without its indexes) and
    its JSONL deflated at the zip's ``level`` (medians of 3)."""
    import zlib

    import psycopg

    from bench.copy_floor import copy_in_floor

    with psycopg.connect(db_url, autocommit=True) as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT MAX(v.id) FROM aggregation_datasetversion v"
            " JOIN annotation_project p ON p.id = v.project_id WHERE p.slug = %s",
            [f"bench-{size}"],
        )
        version = int(cursor.fetchone()[0])
        table = "aggregation_datasetrow"
        _, rows, rows_bare = copy_in_floor(
            cursor, table, f"SELECT * FROM {table} WHERE version_id = {version}"
        )
        cursor.execute(f"SELECT data FROM {table} WHERE version_id = %s ORDER BY id", [version])
        jsonl = "".join(f"{data}\n" for (data,) in cursor).encode()
    deflates = []
    for _ in range(3):
        started = time.perf_counter()
        deflate = zlib.compressobj(level, zlib.DEFLATED, -15)
        deflate.compress(jsonl)
        deflate.flush()
        deflates.append(time.perf_counter() - started)
    return {"rows": rows, "rows_bare": rows_bare, "deflate": statistics.median(deflates)}


# --- the parent -----------------------------------------------------------------------------


def _child(phase: str, db_url: str, media: str, **extra: object) -> tuple[dict, int]:
    """Run a phase in a fresh process; returns its JSON result and its peak RSS in bytes."""
    cmd = [sys.executable, __file__, "--phase", phase, "--db", db_url, "--media", media]
    for key, value in extra.items():
        if value is True:
            cmd.append(f"--{key}")
        elif isinstance(value, list):
            cmd += [f"--{key}", *map(str, value)]
        elif value is not None and value is not False:
            cmd += [f"--{key}", str(value)]
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr_file:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=stdout, stderr=stderr_file)
        # wait4 gives this child's own resource usage (its peak RSS), not the maximum so far.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr_file.seek(0)
        text, stderr = stdout.read().decode(), stderr_file.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"phase {phase} failed:\n{stderr}\n{text}")
    # ru_maxrss is in kilobytes on Linux.
    return json.loads(text.strip().splitlines()[-1]), usage.ru_maxrss * 1024


def _mb(n: float) -> str:
    return f"{n / 1024 / 1024:,.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--criteria", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-trace", action="store_true")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--media", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.phase:
        _django(args.db, args.media)
        phase = {"setup": phase_setup, "idle": phase_idle, "export": phase_export}[args.phase]
        print(json.dumps(phase(args)))
        return

    server = _server_url()
    name = f"bench_export_{os.getpid()}"
    db_url = _with_database(server, name)
    media = tempfile.mkdtemp(prefix="bench-export-media-")
    _admin(server, f"CREATE DATABASE {name}")
    try:
        print(f"database {name}; filling {', '.join(f'{s:,}' for s in args.sizes)} samples ...")
        filled, _ = _child("setup", db_url, media, sizes=args.sizes, criteria=args.criteria)
        _, idle_rss = _child("idle", db_url, media)
        print(f"baseline process (Django + export code loaded): {_mb(idle_rss)} RSS\n")
        header = (
            f"{'samples':>9} {'rows':>9} {'COPY out':>9} {'build':>9} {'CPU':>8} {'x COPY':>7} "
            f"{'range':>11} {'CPU x':>6} "
            f"{'rows/s':>8} {'peak RSS':>10} {'above base':>11} {'traced peak':>12} "
            f"{'parquet':>10} {'zip':>10} {'jsonl':>10}"
        )
        print(header)
        print("-" * len(header))
        for size in args.sizes:
            rounds = []
            for _ in range(max(1, args.repeat)):
                copy_round, copy_cpu = copy_time(db_url, size)
                built, built_rss = _child("export", db_url, media, size=size)
                rounds.append((copy_round, built, built_rss, copy_cpu))
            copy_s = statistics.median(r[0] for r in rounds)
            cpu_ratio = "-"
            if all(r[3] and r[1]["server_cpu"] is not None for r in rounds):
                cpu_ratio = "{:.1f}x".format(
                    statistics.median((r[1]["cpu"] + r[1]["server_cpu"]) / r[3] for r in rounds)
                )
            result = dict(rounds[0][1])
            result["seconds"] = statistics.median(r[1]["seconds"] for r in rounds)
            result["cpu"] = statistics.median(r[1]["cpu"] for r in rounds)
            rss = max(r[2] for r in rounds)
            ratios = [r[1]["seconds"] / r[0] for r in rounds]
            spread = f"{min(ratios):.0f}-{max(ratios):.0f}x"
            traced = "-"
            if not args.no_trace:
                traced_result, _ = _child("export", db_url, media, size=size, trace=True)
                traced = _mb(traced_result["traced_peak"])
            files = result["files"]
            print(
                f"{size:>9,} {result['rows']:>9,} {copy_s:>8.2f}s {result['seconds']:>8.2f}s "
                f"{result['cpu']:>7.2f}s "
                f"{result['seconds'] / copy_s:>6.1f}x {spread:>11} {cpu_ratio:>6} "
                f"{result['rows'] / result['seconds']:>8,.0f} "
                f"{_mb(rss):>10} {_mb(rss - idle_rss):>11} {traced:>12} "
                f"{_mb(files['parquet']):>10} {_mb(files['jsonl_zip']):>10} "
                f"{_mb(files['jsonl']):>10}"
            )
            assert result["rows"] == filled[str(size)]["kept_rows"]
            floor = floors(db_url, size, result["deflate_level"])
            print(
                f"{'':>9} floors: the rows frozen with COPY {floor['rows']:.2f}s "
                f"= {floor['rows'] / copy_s:.1f}x COPY out (without the table's indexes "
                f"{floor['rows_bare'] / copy_s:.1f}x); the JSONL deflated "
                f"{floor['deflate'] / copy_s:.1f}x; with the COPY out: "
                f"{(copy_s + floor['rows'] + floor['deflate']) / copy_s:.1f}x"
            )
        print(
            f"\nmedians of {max(1, args.repeat)} alternating rounds; range: the rounds' ratios; "
            "CPU x: the build's CPU\n(its process and its server backend) over the COPY's (the "
            "backend and the client), steadier than wall time on a shared machine."
            "\nCOPY out: PostgreSQL streaming the same rows (ids, texts, image path, preference) "
            "to the client.\nbuild: version_build end to end (read, JSONL, Parquet with embedded "
            "images, zip, DatasetRow records,\nstorage, manifest) in a fresh process; CPU: that "
            "process's own CPU time."
        )
    finally:
        if not args.keep:
            _admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            import shutil

            shutil.rmtree(media, ignore_errors=True)
        else:
            print(f"kept database {name} and media {media}")


if __name__ == "__main__":
    main()
