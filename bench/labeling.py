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
import contextlib
import http.client
import json
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
    parser.add_argument("--sizes", nargs="+", default=["1000,100000"])
    parser.add_argument("--users", nargs="+", default=["1,10,50"])
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
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        help="formal votes each annotator already holds (completed samples written with COPY)",
    )
    parser.add_argument(
        "--cache-url",
        default=os.environ.get("CACHE_URL", ""),
        help="shared cache for gunicorn (e.g. redis://127.0.0.1:6379/3), as deployed; sessions"
        " are then read from it",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="rounds over the user levels (each on a fresh project); with LABEL_STUDIO_URL, the"
        " median of ours / Label Studio over the pairs",
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


def django_setup(url: str, cache_url: str) -> None:
    # The bench process writes the sessions gunicorn reads: both sign with this key.
    os.environ["SECRET_KEY"] = "bench-only-" + os.urandom(16).hex()
    os.environ["DATABASE_URL"] = url
    os.environ["CACHE_URL"] = cache_url  # the same session store as the server's
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.bench_settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build_project(n: int, slug: str = ""):
    from django.db import connection

    from annotation.models import Sample
    from annotation.services.projects import project_create

    project = project_create(name=f"Bench {n}", slug=slug or f"bench-{n}")
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
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.utils import timezone

    session_store = import_module(settings.SESSION_ENGINE).SessionStore

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
        session = session_store()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        accounts.append((user.pk, session.session_key))
    return accounts


def build_history(project, user_ids: list[int], votes_each: int, prefix: str) -> int:
    """Give each annotator ``votes_each`` formal votes on completed samples; returns votes written.

    The samples are extra formal samples of the same project, all k slots held and completed
    (annotators in threes, a filler account completing the last three), so the project is a
    campaign near its end. Slots and votes are written with COPY, then the member counters are
    recounted once, as the migration does.
    """
    import random

    from django.contrib.auth.models import User
    from django.db import connection
    from django.utils import timezone

    from annotation.models import ProjectMember, Sample, Slot, Vote
    from annotation.services.counters import counters_recount
    from core.db import insert_rows

    criteria = list(
        project.criteria.filter(split="open_ended").order_by("order").values_list("pk", flat=True)
    )
    per_user = -(-votes_each // len(criteria))
    k = project.annotators_per_sample
    holders = list(user_ids)
    for i in range((-len(holders)) % k):
        filler = User.objects.create(username=f"{prefix}-fill-{i}")
        ProjectMember.objects.create(project=project, user=filler, calibrated_at=timezone.now())
        holders.append(filler.pk)
    groups = [holders[i : i + k] for i in range(0, len(holders), k)]
    total = per_user * len(groups)
    for start in range(0, total, 10_000):
        Sample.objects.bulk_create(
            Sample(
                project=project,
                external_id=f"{prefix}-h{i:07d}",
                split="open_ended",
                question=f"Past question {i}?",
                response_a=f"Past answer A {i}.",
                response_b=f"Past answer B {i}.",
            )
            for i in range(start, min(total, start + 10_000))
        )
    ids = list(
        Sample.objects.filter(project=project, external_id__startswith=f"{prefix}-h")
        .order_by("external_id")
        .values_list("pk", flat=True)
    )
    rng = random.Random(17)
    now = timezone.now()
    slot_rows = (
        (sample_id, index, user_id, now, now, now, False)
        for n, sample_id in enumerate(ids)
        for index, user_id in enumerate(groups[n // per_user], start=1)
    )
    slot_fields = ["sample", "index", "annotator", "claimed_at", "lease_expires_at"]
    insert_rows(Slot, [*slot_fields, "completed_at", "swap_ab"], slot_rows)

    def vote_rows():
        for n, sample_id in enumerate(ids):
            for user_id in groups[n // per_user]:
                for criterion_id in criteria:
                    roll = rng.random()
                    choice = "tie" if roll < 0.05 else ("A" if roll < 0.55 else "B")
                    yield (sample_id, criterion_id, user_id, 0, choice, RATIONALE, 7.5)

    vote_fields = ["sample", "criterion", "annotator", "round", "choice", "rationale", "seconds"]
    # The rest of each row as the model's defaults would fill it.
    extra = {"shown_swapped": False, "unsure": False, "created_at": now, "updated_at": now}
    rows = ((*row, *extra.values()) for row in vote_rows())
    written = insert_rows(Vote, [*vote_fields, *extra], rows)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_sample; ANALYZE annotation_slot")
        cursor.execute("ANALYZE annotation_vote")
    counters_recount(project_id=project.pk)
    return written


def progress_timing(project, user_id: int, repeat: int = 30) -> dict[str, float]:
    """Median ms of member_progress, of its floor (the member row by its key) and of counting
    the annotator's formal history (what member_progress did before the counters)."""
    import statistics

    from django.contrib.auth.models import User
    from django.db import connection

    from annotation.models import ProjectMember
    from annotation.selectors.work import member_progress

    user = User.objects.get(pk=user_id)
    history = (
        "SELECT (SELECT COUNT(*) FROM annotation_vote v JOIN annotation_sample s"
        " ON s.id = v.sample_id WHERE v.annotator_id = %s AND v.round = 0 AND s.project_id = %s),"
        " (SELECT COUNT(*) FROM annotation_vote v JOIN annotation_sample s ON s.id = v.sample_id"
        " WHERE v.annotator_id = %s AND v.round = 0 AND s.project_id = %s AND EXISTS (SELECT 1"
        " FROM annotation_slot x WHERE x.sample_id = v.sample_id AND x.annotator_id ="
        " v.annotator_id))"
    )

    def count_history() -> None:
        with connection.cursor() as cursor:
            cursor.execute(history, [user_id, project.pk] * 2)
            cursor.fetchone()

    steps = {
        "floor": lambda: ProjectMember.objects.filter(project=project, user=user).first(),
        "member_progress": lambda: member_progress(project, user),
        "history count": count_history,
    }
    timings = {}
    for name, step in steps.items():
        step()
        runs = []
        for _ in range(repeat):
            began = time.perf_counter()
            step()
            runs.append((time.perf_counter() - began) * 1000)
        timings[name] = statistics.median(runs)
    return timings


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
        "CACHE_URL": args.cache_url,
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


def acked_problems(acked: dict, stored: dict, what: str, other: str) -> list[str]:
    """What the store holds that differs from the acknowledged answers (lost, changed, extra)."""
    problems = []
    lost = acked.keys() - stored.keys()
    if lost:
        problems.append(f"{len(lost)} acknowledged {what} not stored")
    changed = [k for k in acked.keys() & stored.keys() if acked[k] != stored[k]]
    if changed:
        problems.append(f"{len(changed)} acknowledged {what} stored with {other}")
    unacked = stored.keys() - acked.keys()
    if unacked:
        problems.append(f"{len(unacked)} stored {what} never acknowledged")
    return problems


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


# --- Label Studio (the peer), only when LABEL_STUDIO_URL is set -----------------------------

LS_CONFIG = """<View>
  <Header value="$criterion"/>
  <Text name="question" value="$question"/>
  <Text name="response_a" value="$response_a"/>
  <Text name="response_b" value="$response_b"/>
  <Choices name="choice" toName="question" choice="single" required="true">
    <Choice value="A"/><Choice value="B"/><Choice value="tie"/>
  </Choices>
  <TextArea name="rationale" toName="question" required="true"/>
</View>"""


class LabelStudio:
    """Label Studio's own labeling loop over its public HTTP API, for the same K and seconds.

    ``LABEL_STUDIO_URL`` (e.g. http://127.0.0.1:8080) and ``LABEL_STUDIO_TOKEN`` (an owner's
    token: creates the project and imports the tasks) are required; ``LABEL_STUDIO_TOKENS``
    (comma-separated annotator tokens) gives each client its own account, else they all share
    the owner's. A legacy token is sent as ``Token``; a personal access token (a JWT) is
    exchanged at ``/api/token/refresh/`` for a ``Bearer`` access token, exchanged again when
    it expires. One task per (sample, criterion), at most ``annotators_per_sample``
    annotations each; a loop is what the labeling stream does: post the annotation, then ask
    for the next task. Every annotation acknowledged (201) is checked afterwards in the
    project's export.
    """

    def __init__(self, url: str, token: str, tokens: list[str]) -> None:
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self.https = parsed.scheme == "https"
        self.prefix = parsed.path.rstrip("/")
        self.refresh: dict[str, str] = {}  # Bearer header -> the personal access token behind it
        self.owner = self.authorization(token)
        self.tokens = [self.authorization(t) for t in tokens] or [self.owner]
        # Annotation id -> (task id, choice) for every 201, per project.
        self.acked: dict[int, dict[int, tuple[int, str]]] = {}
        self.lock = threading.Lock()

    def connect(self, timeout: float = 60) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return kind(self.host, self.port, timeout=timeout)

    def call(self, conn, method: str, path: str, auth: str, body=None) -> tuple[int, object]:
        headers = {"Authorization": auth, "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, self.prefix + path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = raw[:200].decode(errors="replace")
        return response.status, payload

    def authorization(self, token: str) -> str:
        """The Authorization header for a legacy token, or for a personal access token's access."""
        if token.count(".") != 2:
            return f"Token {token}"
        conn = self.connect()
        try:
            status, payload = self.call(conn, "POST", "/api/token/refresh/", "", {"refresh": token})
        finally:
            conn.close()
        if status != 200 or not isinstance(payload, dict) or "access" not in payload:
            raise RuntimeError(f"token refresh answered {status}")
        header = f"Bearer {payload['access']}"
        self.refresh[header] = token
        return header

    def project_create(self, n: int, criteria: list[str], k: int) -> int:
        conn = self.connect()
        try:
            status, project = self.call(
                conn,
                "POST",
                "/api/projects/",
                self.owner,
                {
                    "title": f"Multi-Crit bench {n} {os.getpid()}",
                    "label_config": LS_CONFIG,
                    "maximum_annotations": k,
                    "show_skip_button": True,
                },
            )
            if status != 201:
                raise RuntimeError(f"project creation answered {status}: {project}")
            pid = project["id"]
            tasks = [
                {
                    "question": f"What does panel {i} show?",
                    "response_a": f"A **short** answer {i} with $x^2$.",
                    "response_b": f"A longer answer {i}.\n\n```\ncode()\n```",
                    "criterion": criterion,
                }
                for criterion in criteria
                for i in range(n)
            ]
            for start in range(0, len(tasks), 5000):
                status, answer = self.call(
                    conn,
                    "POST",
                    f"/api/projects/{pid}/import",
                    self.owner,
                    tasks[start : start + 5000],
                )
                if status not in (200, 201):
                    raise RuntimeError(f"task import answered {status}: {answer}")
            self.acked[pid] = {}
            return pid
        finally:
            conn.close()

    def project_delete(self, pid: int) -> None:
        conn = self.connect()
        try:
            self.call(conn, "DELETE", f"/api/projects/{pid}/", self.owner)
        finally:
            conn.close()

    def run(self, pid: int, users: int, seconds: float) -> tuple[dict[str, float], list[str]]:
        """``users`` clients labeling for ``seconds``: figures and errors."""
        clients = [
            LabelStudioClient(self, pid, self.tokens[i % len(self.tokens)]) for i in range(users)
        ]
        for client in clients:
            client.start()
        wall = drive(clients, seconds, lambda c: c.loop())
        for client in clients:
            client.conn.close()
        latencies = [x for c in clients for x in c.latencies]
        return figures(latencies, wall), [e for c in clients for e in c.errors]

    def check(self, pid: int, k: int) -> list[str]:
        """Every acknowledged annotation stored as sent, none unacknowledged, at most k a task."""
        conn = self.connect(timeout=600)  # the whole project, on a loaded machine
        try:
            status, tasks = self.call(
                conn,
                "GET",
                f"/api/projects/{pid}/export?exportType=JSON&download_all_tasks=true",
                self.owner,
            )
        except OSError as exc:
            return [f"export failed: {exc!r}"]
        finally:
            conn.close()
        if status != 200 or not isinstance(tasks, list):
            return [f"export answered {status}"]
        stored: dict[int, tuple[int, str]] = {}
        over = twice = 0
        for task in tasks:
            kept = [a for a in task.get("annotations", []) if not a.get("was_cancelled")]
            over += len(kept) > k
            annotators = [a["completed_by"] for a in kept]
            twice += len(annotators) != len(set(annotators))
            for annotation in kept:
                choices = [
                    r["value"]["choices"][0] for r in annotation["result"] if r["type"] == "choices"
                ]
                stored[annotation["id"]] = (task["id"], choices[0] if choices else "")
        acked = self.acked.get(pid, {})
        problems = []
        if over:
            problems.append(f"{over} tasks with more than {k} annotations")
        if twice:
            problems.append(f"{twice} tasks annotated twice by one annotator")
        problems += acked_problems(acked, stored, "annotations", "another task or choice")
        return problems


@dataclass
class LabelStudioClient:
    """One Label Studio annotator on one keep-alive connection."""

    ls: LabelStudio
    pid: int
    auth: str
    task: int | None = None
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.conn = self.ls.connect()

    def call(self, method: str, path: str, body=None) -> tuple[int, object]:
        """One request; a closed keep-alive connection or an expired access token retried once."""
        try:
            status, payload = self.ls.call(self.conn, method, path, self.auth, body)
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            self.conn.close()
            self.conn = self.ls.connect()
            status, payload = self.ls.call(self.conn, method, path, self.auth, body)
        if status == 401 and self.auth in self.ls.refresh:
            self.auth = self.ls.authorization(self.ls.refresh[self.auth])
            status, payload = self.ls.call(self.conn, method, path, self.auth, body)
        return status, payload

    def next_task(self) -> None:
        status, task = self.call("GET", f"/api/projects/{self.pid}/next/")
        if status == 404:
            self.task = None  # nothing left for this annotator
        elif status != 200 or not isinstance(task, dict):
            self.errors.append(f"next {status}: {str(task)[:200]}")
            self.task = None
        else:
            self.task = task["id"]

    def start(self) -> None:
        try:
            self.next_task()
        except OSError as exc:  # recorded and reported; this client does not run
            self.errors.append(f"first next: {exc!r}")
            self.task = None

    def loop(self) -> bool:
        """Post an annotation on the current task and fetch the next one. False when done."""
        if self.task is None:
            return False
        choice = "A" if self.task % 2 else "B"
        result = [
            {
                "from_name": "choice",
                "to_name": "question",
                "type": "choices",
                "value": {"choices": [choice]},
            },
            {
                "from_name": "rationale",
                "to_name": "question",
                "type": "textarea",
                "value": {"text": [RATIONALE]},
            },
        ]
        body = {"result": result, "lead_time": 7.5, "project": self.pid, "task": self.task}
        began = time.perf_counter()
        path = f"/api/tasks/{self.task}/annotations/?project={self.pid}"
        status, answer = self.call("POST", path, body)
        if status != 201 or not isinstance(answer, dict):
            self.errors.append(f"annotation {status}: {str(answer)[:200]}")
            return False
        with self.ls.lock:
            self.ls.acked.setdefault(self.pid, {})[answer["id"]] = (self.task, choice)
        self.next_task()
        self.latencies.append(time.perf_counter() - began)
        return self.task is not None


def label_studio_from_env() -> LabelStudio | None:
    """The peer to compare with, or None (with a line saying why) when it is not configured."""
    url = os.environ.get("LABEL_STUDIO_URL", "")
    if not url:
        return None
    token = os.environ.get("LABEL_STUDIO_TOKEN", "")
    if not token:
        print("Label Studio: LABEL_STUDIO_URL is set but LABEL_STUDIO_TOKEN is not; skipped")
        return None
    tokens = [t for t in os.environ.get("LABEL_STUDIO_TOKENS", "").split(",") if t.strip()]
    try:
        return LabelStudio(url, token, [t.strip() for t in tokens])
    except (OSError, RuntimeError, ValueError) as exc:
        print(f"Label Studio at {url}: skipped ({exc})")
        return None


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
    from annotation.models import ProjectMember, Slot, Vote
    from annotation.services.counters import counters_recount

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
    # The votes of this run: not the history (--history) the accounts started with.
    every_vote = Vote.objects.filter(
        sample__project=project, annotator_id__in=user_ids, sample__external_id__startswith="b-"
    )
    dup_votes = (
        every_vote.values("sample_id", "criterion_id", "annotator_id", "round")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    if dup_votes:
        problems.append(f"{dup_votes} duplicated votes")
    votes = every_vote.filter(round=0)
    history = Vote.objects.filter(sample__project=project, annotator_id__in=user_ids, round=0)
    over_cap = [
        (row["annotator_id"], row["t"], row["n"])
        for row in history.values("annotator_id").annotate(
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
    problems += acked_problems(acked, stored, "votes", "another choice")
    members = ProjectMember.objects.filter(project=project, user_id__in=user_ids)
    kept = {m["user_id"]: m for m in members.values()}
    counters_recount(project_id=project.pk)
    drift = [m["user_id"] for m in members.values() if m != kept[m["user_id"]]]
    if drift:
        problems.append(f"{len(drift)} annotators' counters differ from a recount")
    return problems


def peer_line(
    peer: LabelStudio, projects: dict[int, int], n: int, users: int, args, ours: float
) -> tuple[float, list[str]]:
    """Run Label Studio's loop at the same size and concurrency; print it beside ours.

    Returns its loops/s (NaN when it could not run) and what went wrong: HTTP errors and the
    broken checks of its export.
    """
    from annotation.models import Criterion

    try:
        if n not in projects:
            criteria = list(
                Criterion.objects.filter(project__slug=f"bench-{n}", split="open_ended")
                .order_by("order")
                .values_list("name", flat=True)
            )
            projects[n] = peer.project_create(n, criteria, 3)
        result, errors = peer.run(projects[n], users, args.seconds)
        problems = peer.check(projects[n], 3)
    except (OSError, RuntimeError, KeyError, TypeError) as exc:
        print(f"  Label Studio: skipped ({exc!r})", flush=True)
        return float("nan"), [f"Label Studio did not run: {exc!r}"]
    if errors:
        problems.insert(0, f"{len(errors)} HTTP errors, first: {errors[0]}")
    times = ours / result["per_s"] if result["per_s"] else float("nan")
    print(
        f"  Label Studio {n:,} x {users}: {result['n']} loops, {result['per_s']:.1f} loops/s,"
        f" p50 {result['p50']:.1f} ms, p99 {result['p99']:.1f} ms; {'; '.join(problems) or 'ok'}"
        f"; ours / Label Studio: {times:.1f}x",
        flush=True,
    )
    return result["per_s"], problems


def rounds(levels: list[int], pairs: int) -> list[tuple[int, int]]:
    """(round, users) in run order: every level once per round, so the rounds alternate."""
    return [(rep, users) for rep in range(pairs) for users in levels]


def pairs_summary(pairs: dict[tuple[int, int], list[tuple[float, float]]]) -> None:
    """Print ours / Label Studio per size and K: the median of the pairs run back to back."""
    import statistics

    print("\nours / Label Studio, each pair run back to back (ours, then Label Studio):")
    for (n, users), runs in pairs.items():
        runs = [(o, t) for o, t in runs if t == t and t > 0]  # not a pair if theirs did not run
        if not runs:
            continue
        ratios = sorted(o / t for o, t in runs)
        ours = statistics.median(o for o, _ in runs)
        theirs = statistics.median(t for _, t in runs)
        print(
            f"  {n:>8,} x {users:>3}: median {statistics.median(ratios):.1f}x over"
            f" {len(ratios)} pairs (range {ratios[0]:.1f} - {ratios[-1]:.1f}x);"
            f" loops/s, medians: ours {ours:.1f}, Label Studio {theirs:.1f}",
            flush=True,
        )


# --- main ---------------------------------------------------------------------------------


def main() -> int:
    args = parse_args()
    sizes = [int(x) for x in ",".join(args.sizes).split(",") if x]
    levels = [int(x) for x in ",".join(args.users).split(",") if x]
    name, url = scratch_database(args.server)
    proc = None
    failures = 0
    try:
        django_setup(url, args.cache_url)
        peer = label_studio_from_env()
        projects = {}
        for n in sizes:
            began = time.monotonic()
            projects[n] = build_project(n)
            print(f"built project of {n:,} samples in {time.monotonic() - began:.1f}s", flush=True)
        proc = start_gunicorn(url, args)
        peer_projects: dict[int, int] = {}
        pairs: dict[tuple[int, int], list[tuple[float, float]]] = {}
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
            for rep, users in rounds(levels, args.pairs):
                if rep and users == levels[0]:  # a fresh project per round: no run lacks items
                    project = build_project(n, slug=f"bench-{n}-r{rep}")
                prefix = f"r{rep}u{n}-{users}" if rep else f"u{n}-{users}"
                accounts = make_accounts(project, prefix, users)
                if args.history:
                    began = time.monotonic()
                    written = build_history(
                        project, [uid for uid, _ in accounts], args.history, prefix
                    )
                    print(
                        f"  history: {written:,} formal votes for {users} annotators"
                        f" ({args.history:,} each) in {time.monotonic() - began:.1f}s",
                        flush=True,
                    )
                ms = progress_timing(project, accounts[0][0])
                print(
                    f"  member_progress {ms['member_progress']:.2f} ms (floor, the member row:"
                    f" {ms['floor']:.2f} ms; counting the history: {ms['history count']:.2f} ms)",
                    flush=True,
                )
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
                if peer is not None:
                    theirs, peer_problems = peer_line(
                        peer, peer_projects, n, users, args, label["per_s"]
                    )
                    pairs.setdefault((n, users), []).append((label["per_s"], theirs))
                    failures += bool(peer_problems)
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
        if pairs:
            pairs_summary(pairs)
    finally:
        if proc is not None:
            stop_gunicorn(proc)
        if peer is not None:
            for pid in peer_projects.values():
                with contextlib.suppress(OSError):
                    peer.project_delete(pid)
        from django.db import connections

        connections.close_all()
        drop_database(args.server, name)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
