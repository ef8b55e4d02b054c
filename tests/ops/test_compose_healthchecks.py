"""docker-compose.yml's healthchecks, run for real against the processes they watch.

The web check asks ``/healthz`` and stays healthy while Redis is down (pages keep working; a
restart would not bring Redis back), with compose's production settings (HTTPS redirect, a
public host name). The worker check pings the worker through the broker: unhealthy while Redis
is down, healthy again once the worker has reconnected by itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.celery_worker import ROOT, _worker_env, wait_for
from tests.core.test_jobs_queue_down import PrivateRedis
from tests.ops.live import Celery, free_port, gunicorn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def healthcheck(service: str) -> list[str]:
    return COMPOSE["services"][service]["healthcheck"]["test"]


def web_check(port: int) -> int:
    """The web service's check, pointed at ``port`` instead of 8000; its exit status."""
    kind, python, flag, code = healthcheck("web")
    assert (kind, python, flag) == ("CMD", "python", "-c") and "'/healthz'" in code
    done = subprocess.run(
        [sys.executable, flag, code.replace("8000", str(port))], capture_output=True, timeout=30
    )
    return done.returncode


def test_the_web_check_is_healthy_while_redis_is_down_and_not_once_gunicorn_is(tmp_path):
    closed = f"redis://127.0.0.1:{free_port()}"  # nothing listens there: Redis is down
    production = {
        "ALLOWED_HOSTS": "studio.example.org",
        "SECURE_SSL_REDIRECT": "1",
        "BEHIND_PROXY": "1",
        "CELERY_BROKER_URL": f"{closed}/0",
        "CACHE_URL": f"{closed}/1",
    }
    with gunicorn(tmp_path, production, workers=1) as server:
        assert web_check(server.port) == 0
        assert server.get("/readyz").status == 503  # what monitoring sees meanwhile
        port = server.port
    assert web_check(port) != 0


@pytest.mark.celery_worker
def test_the_worker_check_follows_the_broker(tmp_path: Path):
    (kind, command) = healthcheck("worker")
    assert kind == "CMD-SHELL"
    command = command.replace("$$", "$")  # compose's escape for a literal $
    redis_server = PrivateRedis(tmp_path)
    redis_server.start()
    celery = Celery(tmp_path, redis_server.url, {})
    env = {**_worker_env(tmp_path, {"CELERY_BROKER_URL": redis_server.url}), "HOSTNAME": "box1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"

    def check() -> int:
        try:
            done = subprocess.run(
                ["sh", "-c", command], cwd=ROOT, env=env, capture_output=True, timeout=45
            )
        except subprocess.TimeoutExpired:
            return -1  # compose's 30 s timeout: unhealthy
        return done.returncode

    try:
        celery.start("worker", "worker", "-n", "celery@box1")
        wait_for(lambda: "ready." in celery.log("worker"), timeout=60)
        assert check() == 0
        redis_server.stop()
        assert check() != 0
        redis_server.start()
        wait_for(lambda: check() == 0, timeout=120, interval=1)
        assert celery.alive("worker")
    finally:
        celery.stop()
        redis_server.stop()
