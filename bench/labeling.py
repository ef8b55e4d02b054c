"""Load run of the labeling loop (submit + next over HTTP) against gunicorn and PostgreSQL.

    .venv/bin/python bench/labeling.py [--sizes 1000,100000] [--users 1,10,50] [--seconds 15]
        [--workers 3] [--threads 8] [--port 8765] [--server postgres://postgres@127.0.0.1:5432]
        [--tie-every 7] [--no-minimal]

    # 50 annotators for a fixed minute on one project:
    .venv/bin/python bench/labeling.py --sizes 1000 --users 50 --seconds 60

Creates a scratch database on the PostgreSQL server, migrates it, builds one project per size
(formal samples with their pre-created slots), starts gunicorn on 127.0.0.1, and for every
concurrency level runs that many simulated annotators (distinct, calibrated accounts, each on
its own keep-alive connection) posting a vote and receiving the next item in one htmx request,
as the labeling screen does. About one item in ``--tie-every`` is answered with a tie; a tie
the cap refuses (422) is answered again with A or B, as an annotator would. The same clients
then hit a minimal view (one indexed read and one insert behind the same middleware) for the
ratio, unless ``--no-minimal``. Prints loops/s and p50/p95/p99 latency for both, the HTTP errors
(any answer but 200, or 422 for a tie over the cap) and ties refused, then checks the
invariants: no sample above its 3-annotator cap (slot rows and distinct voters), no annotator
twice on a sample, one vote per (sample, criterion, annotator, round), every annotator's ties
strictly below the project's tie cap, and every acknowledged (2xx) vote stored with the choice
that was sent. Exits 1 when any run has an error or a broken invariant. Stops gunicorn and drops
the scratch database at the end.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RATIONALE = "Response A answers the question and B drifts; checked both."
ITEM = re.compile(r'data-sample="(\d+)" data-criterion="(\d+)"')


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--users", default="1,10,50")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument(
        "--tie-every", type=int, default=7, help="answer about one item in N with a tie (0: never)"
    )
    parser.add_argument(
        "--no-minimal", action="store_true", help="skip the minimal-view comparison run"
    )
    return parser.parse_args()


# --- database and Django ------------------------------------------------------------------


def scratch_database(server: str) -> tuple[str, str]:
    import psycopg

    name = f"bench_labeling_{os.getpid()}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name, f"{server}/{name}"


def drop_database(server: str, name: str) -> None:
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def django_setup(url: str) -> None:
    # The bench process writes the sessions gunicorn reads: both sign with this key.
    os.environ["SECRET_KEY"] = "bench-only-" + os.urandom(16).hex()
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.bench_settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build_project(n: int):
    from django.db import connection

    from annotation.models import Sample
    from annotation.services.projects import project_create

    project = project_create(name=f"Bench {n}", slug=f"bench-{n}")
    batch = 10_000
    for start in range(0, n, batch):
        Sample.objects.bulk_create(
            Sample(
                project=project,
                external_id=f"b-{i:07d}",
                split="open_ended",
                question=f"What does panel {i} show?",
                response_a=f"A **short** answer {i} with $x^2$.",
                response_b=f"A longer answer {i}.\n\n```\ncode()\n```",
            )
            for i in range(start, min(n, start + batch))
        )
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO annotation_slot (sample_id, index, swap_ab)"
            " SELECT s.id, g, false FROM annotation_sample s"
            " CROSS JOIN generate_series(1, %s) g WHERE s.project_id = %s",
            [project.annotators_per_sample, project.pk],
        )
        cursor.execute("ANALYZE")
    return project


def make_accounts(project, prefix: str, count: int) -> list[tuple[int, str]]:
    """Calibrated annotators with a logged-in session each: (user id, session key)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils import timezone

    from annotation.models import ProjectMember

    users = [User(username=f"{prefix}-{i:03d}") for i in range(count)]
    for user in users:
        user.set_unusable_password()
    User.objects.bulk_create(users)
    users = list(User.objects.filter(username__startswith=f"{prefix}-").order_by("id"))
    now = timezone.now()
    ProjectMember.objects.bulk_create(
        [ProjectMember(project=project, user=u, calibrated_at=now) for u in users]
    )
    accounts = []
    for user in users:
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        accounts.append((user.pk, session.session_key))
    return accounts


# --- gunicorn -----------------------------------------------------------------------------


def start_gunicorn(url: str, args: argparse.Namespace) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "bench.bench_settings",
        "DEBUG": "0",
        "SECRET_KEY": os.environ["SECRET_KEY"],
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        # Plain HTTP on 127.0.0.1: no HTTPS redirect (production has a TLS proxy in front).
        "SECURE_SSL_REDIRECT": "0",
        "BEHIND_PROXY": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    env.pop("CELERY_BROKER_URL", None)
    # Static files come from the app folders (WhiteNoise finders); no collectstatic needed.
    env["PYTHONWARNINGS"] = "ignore:No directory at"
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{args.port}",
            "--workers",
            str(args.workers),
            "--threads",
            str(args.threads),
            "--worker-class",
            "gthread",
            "--keep-alive",
            "30",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stderr=subprocess.PIPE,
        text=True,
    )
    threading.Thread(target=relay_errors, args=(proc.stderr,), daemon=True).start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=2)
            conn.request("GET", "/accounts/login/")
            if conn.getresponse().status == 200:
                conn.close()
                return proc
        except OSError:
            time.sleep(0.3)
    stop_gunicorn(proc)
    raise RuntimeError("gunicorn did not start")


def relay_errors(stream) -> None:
    """Copy gunicorn's log to stderr, without Django's warning for each refused tie (422)."""
    for line in stream:
        if not line.startswith("Unprocessable Entity:"):
            sys.stderr.write(line)


def stop_gunicorn(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# --- clients ------------------------------------------------------------------------------


@dataclass
class Client:
    """One simulated annotator on one keep-alive connection."""

    port: int
    user_id: int
    session: str
    tie_every: int = 0
    csrf: str = ""
    item: tuple[int, int] | None = None
    latencies: list[float] = field(default_factory=list)
    acked: dict[tuple[int, int, int], str] = field(default_factory=dict)
    refused: int = 0
    tie_refused: int = 0
    ties_acked: int = 0
    tie_refused_on: tuple[int, int] | None = None
    errors: list[str] = field(default_factory=list)
    reconnects: int = 0

    def __post_init__(self) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def _cookies(self) -> str:
        cookie = f"sessionid={self.session}"
        return cookie + (f"; csrftoken={self.csrf}" if self.csrf else "")

    def request(self, method: str, path: str, form: dict | None = None) -> tuple[int, str, dict]:
        headers = {"Cookie": self._cookies(), "HX-Request": "true"}
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["X-CSRFToken"] = self.csrf
        try:
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # The server closed an idle keep-alive connection: reconnect and send again (a
            # repeated vote is harmless, it records no revision).
            self.reconnects += 1
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
        text = response.read().decode()
        for value in response.headers.get_all("Set-Cookie") or []:
            if value.startswith("csrftoken="):
                self.csrf = value.split(";", 1)[0].split("=", 1)[1]
        return response.status, text, dict(response.headers)

    def start(self, slug: str) -> None:
        status, text, _ = self.request("GET", f"/projects/{slug}/label/")
        if status != 200:
            raise RuntimeError(f"label page answered {status}")
        match = ITEM.search(text)
        self.item = (int(match[1]), int(match[2])) if match else None

    def loop(self, slug: str) -> bool:
        """Submit a vote on the current item and read the next one. False when done."""
        if self.item is None:
            return False
        sample_id, criterion_id = self.item
        choice = self.choose(sample_id, criterion_id)
        form = {
            "sample_id": sample_id,
            "criterion_id": criterion_id,
            "choice": choice,
            "rationale": RATIONALE,
            "seconds": "7.5",
        }
        began = time.perf_counter()
        status, text, _ = self.request("POST", f"/projects/{slug}/label/", form)
        self.latencies.append(time.perf_counter() - began)
        if status == 200:
            self.acked[(sample_id, criterion_id, self.user_id)] = choice
            self.ties_acked += choice == "tie"
        elif status == 422 and choice == "tie":
            # Over the tie cap: the same item comes back; it is answered with A or B next.
            self.tie_refused += 1
            self.tie_refused_on = (sample_id, criterion_id)
        elif status == 422:
            self.refused += 1
        else:
            self.errors.append(f"{status}: {text[:200]}")
            return False
        match = ITEM.search(text)
        self.item = (int(match[1]), int(match[2])) if match else None
        return self.item is not None

    def choose(self, sample_id: int, criterion_id: int) -> str:
        """A, B or (about one item in ``tie_every``) a tie; never a tie the cap just refused."""
        if (
            self.tie_every
            and self.tie_refused_on != (sample_id, criterion_id)
            and (sample_id * 31 + criterion_id * 7 + self.user_id) % self.tie_every == 0
        ):
            return "tie"
        return "A" if (sample_id + criterion_id) % 2 else "B"

    def minimal(self, slug: str) -> None:
        began = time.perf_counter()
        status, text, _ = self.request("POST", f"/bench/{slug}/minimal/", {})
        self.latencies.append(time.perf_counter() - began)
        if status != 200:
            self.errors.append(f"{status}: {text[:200]}")


def drive(clients: list[Client], seconds: float, step) -> float:
    """Run ``step(client)`` on every client in its own thread for ``seconds``; returns wall time."""
    stop = time.monotonic() + seconds
    barrier = threading.Barrier(len(clients) + 1)

    def run(client: Client) -> None:
        barrier.wait()
        try:
            while time.monotonic() < stop:
                if step(client) is False:
                    break
        except Exception as exc:  # recorded and reported; the run goes on
            client.errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    barrier.wait()
    began = time.monotonic()
    for thread in threads:
        thread.join()
    return time.monotonic() - began


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index] * 1000


def figures(latencies: list[float], wall: float) -> dict[str, float]:
    return {
        "n": len(latencies),
        "per_s": len(latencies) / wall if wall else 0.0,
        "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95),
        "p99": percentile(latencies, 99),
    }


# --- invariants ---------------------------------------------------------------------------


def check_invariants(
    project, acked: dict[tuple[int, int, int], str], user_ids: list[int]
) -> list[str]:
    """Every broken invariant of the project's labeling state, as a sentence each."""
    from django.db.models import Count, Q

    from annotation import tiecap
    from annotation.models import Slot, Vote

    problems = []
    k = project.annotators_per_sample
    rows = Slot.objects.filter(sample__project=project)
    over = rows.values("sample_id").annotate(n=Count("id")).filter(n__gt=k).count()
    if over:
        problems.append(f"{over} samples with more than {k} slot rows")
    dup_slots = (
        rows.exclude(annotator=None)
        .values("sample_id", "annotator_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    if dup_slots:
        problems.append(f"{dup_slots} annotators hold two slots of one sample")
    every_vote = Vote.objects.filter(sample__project=project, annotator_id__in=user_ids)
    dup_votes = (
        every_vote.values("sample_id", "criterion_id", "annotator_id", "round")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    if dup_votes:
        problems.append(f"{dup_votes} duplicated votes")
    votes = every_vote.filter(round=0)
    over_cap = [
        (row["annotator_id"], row["t"], row["n"])
        for row in votes.values("annotator_id").annotate(
            n=Count("id"), t=Count("id", filter=Q(choice="tie"))
        )
        if row["t"] and not tiecap.within_cap(ties=row["t"], votes=row["n"], cap=project.tie_cap)
    ]
    if over_cap:
        user, t, n = over_cap[0]
        problems.append(
            f"{len(over_cap)} annotators at or above the {project.tie_cap} tie cap"
            f" (user {user}: {t} ties in {n} votes)"
        )
    voters = (
        Vote.objects.filter(sample__project=project, round=0)
        .values("sample_id")
        .annotate(n=Count("annotator_id", distinct=True))
        .filter(n__gt=k)
        .count()
    )
    if voters:
        problems.append(f"{voters} samples voted by more than {k} annotators")
    stored = {
        (s, c, a): choice
        for s, c, a, choice in votes.values_list(
            "sample_id", "criterion_id", "annotator_id", "choice"
        )
    }
    lost = acked.keys() - stored.keys()
    if lost:
        problems.append(f"{len(lost)} acknowledged votes not stored")
    changed = [k for k in acked.keys() & stored.keys() if acked[k] != stored[k]]
    if changed:
        problems.append(f"{len(changed)} acknowledged votes stored with another choice")
    unacked = stored.keys() - acked.keys()
    if unacked:
        problems.append(f"{len(unacked)} stored votes never acknowledged")
    return problems


# --- main ---------------------------------------------------------------------------------


def main() -> int:
    args = parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    levels = [int(x) for x in args.users.split(",") if x]
    name, url = scratch_database(args.server)
    proc = None
    failures = 0
    try:
        django_setup(url)
        projects = {}
        for n in sizes:
            began = time.monotonic()
            projects[n] = build_project(n)
            print(f"built project of {n:,} samples in {time.monotonic() - began:.1f}s", flush=True)
        proc = start_gunicorn(url, args)
        print(
            f"gunicorn on 127.0.0.1:{args.port}: {args.workers} workers x {args.threads} threads;"
            f" {args.seconds:g}s per run\n"
        )
        header = (
            f"{'samples':>8} {'users':>5} | {'loops':>6} {'loops/s':>8} {'p50 ms':>7} "
            f"{'p95 ms':>7} {'p99 ms':>7} | {'errors':>6} {'ties':>5} {'refused':>7} | "
            f"{'minimal/s':>9} {'p50 ms':>7} {'p99 ms':>7} | {'ratio':>5} | invariants"
        )
        print(header)
        print("-" * len(header))
        for n in sizes:
            project = projects[n]
            for users in levels:
                accounts = make_accounts(project, f"u{n}-{users}", users)
                clients = [Client(args.port, uid, key, args.tie_every) for uid, key in accounts]
                for client in clients:
                    client.start(project.slug)
                slug = project.slug
                wall = drive(clients, args.seconds, lambda c, slug=slug: c.loop(slug))
                label = figures([x for c in clients for x in c.latencies], wall)
                label_errors = [e for c in clients for e in c.errors]
                acked = {k: v for c in clients for k, v in c.acked.items()}
                refused = sum(c.refused for c in clients)
                ties = sum(c.ties_acked for c in clients)
                ties_refused = sum(c.tie_refused for c in clients)
                base = {"per_s": float("nan"), "p50": float("nan"), "p99": float("nan")}
                minimal_errors: list[str] = []
                if not args.no_minimal:
                    for client in clients:
                        client.latencies, client.errors = [], []
                    wall_min = drive(clients, args.seconds, lambda c, slug=slug: c.minimal(slug))
                    base = figures([x for c in clients for x in c.latencies], wall_min)
                    minimal_errors = [e for c in clients for e in c.errors]
                for client in clients:
                    client.conn.close()
                problems = check_invariants(project, acked, [uid for uid, _ in accounts])
                errors = label_errors + minimal_errors
                if errors:
                    problems.append(f"{len(errors)} HTTP errors, first: {errors[0]}")
                if refused:
                    problems.append(f"{refused} votes refused")
                failures += bool(problems)
                ratio = label["per_s"] / base["per_s"] if base["per_s"] else float("nan")
                print(
                    f"{n:>8,} {users:>5} | {label['n']:>6} {label['per_s']:>8.1f} "
                    f"{label['p50']:>7.1f} {label['p95']:>7.1f} {label['p99']:>7.1f} | "
                    f"{len(errors):>6} {ties:>5} {ties_refused:>7} | "
                    f"{base['per_s']:>9.1f} {base['p50']:>7.1f} {base['p99']:>7.1f} | "
                    f"{ratio:>5.2f} | {'; '.join(problems) or 'ok'}",
                    flush=True,
                )
        print(
            "\nloops/s: submit + next requests completed per second by all users together;"
            " errors: HTTP answers other than 200 (and 422 for a tie over the cap) or failed"
            " requests; ties: ties accepted; refused: ties the cap refused (then answered A or B);"
            " ratio: labeling loops/s over minimal requests/s at the same concurrency."
        )
    finally:
        if proc is not None:
            stop_gunicorn(proc)
        from django.db import connections

        connections.close_all()
        drop_database(args.server, name)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
