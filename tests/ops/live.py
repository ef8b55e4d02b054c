"""Real servers for the fault tests: gunicorn on the test database with a browser-like client,
and the documented Celery worker and beat commands.

Use from a ``transaction=True`` test: gunicorn's workers are other processes and see committed
rows only. Users who log in over HTTP need a password hashed by a hasher the server knows
(``login_password`` below), not the suite's fast test hasher.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from tests.celery_worker import ROOT, _test_database_url, _worker_env, wait_for

PASSWORD = "a-long-pass-for-the-fault-tests"
_CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
ITEM = re.compile(r'data-sample="(\d+)" data-criterion="(\d+)"')
RATIONALE = "Response A answers the question and B drifts; checked both."


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def login_password(user) -> None:
    """Give ``user`` the password the tests log in with, hashed as the server verifies it."""
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    user.password = PBKDF2PasswordHasher().encode(PASSWORD, "faulttests", iterations=1000)
    user.save(update_fields=["password"])


@dataclass
class Answer:
    status: int
    text: str
    headers: dict[str, str]


class Gunicorn:
    """gunicorn on a free port, with production settings (DEBUG off) over plain HTTP."""

    def __init__(self, tmp_path: Path, env: dict[str, str], *, workers: int = 2) -> None:
        self.tmp_path = tmp_path
        self.port = free_port()
        self.workers = workers
        self.log_path = tmp_path / f"gunicorn-{self.port}.log"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": _test_database_url(),
            "MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "VAR_DIR": str(tmp_path / "web-var"),
            "DEBUG": "0",
            "SECRET_KEY": "fault-tests-" + "k" * 50,
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "0",
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "PYTHONWARNINGS": "ignore:No directory at",
        }
        for name in ("CELERY_BROKER_URL", "CACHE_URL", "REDIS_URL"):
            self.env.pop(name, None)
        self.env.update(env)
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the server and wait until ``/healthz`` answers."""
        log = open(self.log_path, "a")  # noqa: SIM115 - kept open for the process
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(self.workers),
                "--timeout",
                "60",
                "--graceful-timeout",
                "5",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        wait_for(lambda: self.answers("/healthz"), timeout=60, interval=0.2)

    def answers(self, path: str) -> bool:
        try:
            return self.get(path).status == 200
        except OSError:
            return False

    def get(self, path: str) -> Answer:
        """One plain GET on a fresh connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return Answer(response.status, response.read().decode(), dict(response.headers))
        finally:
            conn.close()

    def worker_pids(self) -> list[int]:
        """The pids of the master's worker processes."""
        assert self.process is not None
        pid = self.process.pid
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=20)


@contextlib.contextmanager
def gunicorn(tmp_path: Path, env: dict[str, str], *, workers: int = 2) -> Iterator[Gunicorn]:
    server = Gunicorn(tmp_path, env, workers=workers)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Browser:
    """A user's cookies (and headers, a token say), sending each request on a fresh connection."""

    port: int
    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)

    def request(
        self,
        method: str,
        path: str,
        form: dict | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        sent = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        sent.update(self.headers)
        sent.update(headers or {})
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            sent["Content-Type"] = "application/x-www-form-urlencoded"
            sent["X-CSRFToken"] = self.cookies.get("csrftoken", "")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            text = response.read().decode()
            for value in response.headers.get_all("Set-Cookie") or []:
                name, _, rest = value.partition("=")
                self.cookies[name] = rest.split(";", 1)[0]
            return Answer(response.status, text, dict(response.headers))
        finally:
            conn.close()

    def get(self, path: str, **headers: str) -> Answer:
        return self.request("GET", path, headers=headers)

    def post(self, path: str, form: dict, **headers: str) -> Answer:
        return self.request("POST", path, form=form, headers=headers)

    def login(self, username: str) -> None:
        """Log in through the login form, as a person would."""
        page = self.get("/accounts/login/")
        token = _CSRF_FIELD.search(page.text)
        assert page.status == 200 and token, page.status
        answer = self.post(
            "/accounts/login/",
            {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token[1]},
        )
        assert answer.status == 302, (answer.status, answer.text[:300])
        assert self.cookies.get("sessionid")


class Annotator:
    """An annotator labeling over HTTP: each vote acknowledged (200) is remembered."""

    def __init__(self, browser: Browser, slug: str, user_id: int) -> None:
        self.browser = browser
        self.slug = slug
        self.user_id = user_id
        self.item: tuple[int, int] | None = None
        self.acked: set[tuple[int, int, int]] = set()

    def page(self) -> int:
        answer = self.browser.get(f"/projects/{self.slug}/label/")
        self._read_item(answer.text)
        return answer.status

    def vote(self) -> int:
        """Vote on the current item and read the next one from the answer."""
        if self.item is None:  # the last answer carried no item (an error page): ask again
            self.page()
        form = self.vote_form()
        answer = self.browser.post(f"/projects/{self.slug}/label/", form, **{"HX-Request": "true"})
        if answer.status == 200:
            self.acked.add((int(form["sample_id"]), int(form["criterion_id"]), self.user_id))
        self._read_item(answer.text)
        return answer.status

    def _read_item(self, text: str) -> None:
        found = ITEM.search(text)
        self.item = (int(found[1]), int(found[2])) if found else None

    def vote_form(self) -> dict[str, object]:
        """The form of a vote on the current item."""
        assert self.item is not None, "no item to label"
        sample_id, criterion_id = self.item
        return {
            "sample_id": sample_id,
            "criterion_id": criterion_id,
            "choice": "A" if (sample_id + criterion_id) % 2 else "B",
            "rationale": RATIONALE,
            "seconds": "7.5",
        }


def logged_in(port: int, username: str) -> Browser:
    browser = Browser(port)
    browser.login(username)
    return browser


def until(predicate, timeout: float) -> float:
    """Seconds until ``predicate`` held (raises after ``timeout``)."""
    began = time.monotonic()
    wait_for(predicate, timeout=timeout, interval=0.1)
    return time.monotonic() - began


class Celery:
    """The documented worker and beat commands, as separate processes on the private Redis."""

    def __init__(self, tmp_path: Path, broker: str, env: dict[str, str]) -> None:
        self.tmp_path = tmp_path
        self.env = _worker_env(tmp_path, {"CELERY_BROKER_URL": broker, **env})
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self, name: str, *args: str) -> None:
        log = open(self.tmp_path / f"{name}.log", "w")  # noqa: SIM115 - kept for the process
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", *args, "--loglevel=INFO"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text()

    def alive(self, name: str) -> bool:
        return self.processes[name].poll() is None

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=20)
