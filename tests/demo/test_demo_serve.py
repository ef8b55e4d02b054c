"""``manage.py demo_serve`` (what ``make demo`` ends with): the address once the server answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env["VAR_DIR"] = str(tmp_path)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _serve(port: int, tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "demo_serve", f"127.0.0.1:{port}", "--timeout", "60"],
        cwd=ROOT,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_the_address_is_printed_with_the_port_given_once_the_server_answers(tmp_path):
    port = _free_port()
    server = _serve(port, tmp_path)
    try:
        lines = []
        for line in server.stdout:
            lines.append(line)
            if "The demo is up at" in line:
                break
        assert f"The demo is up at http://127.0.0.1:{port}/" in lines[-1], lines
        # Printed only once the port answers: a connection succeeds right away.
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        assert "8000" not in "".join(lines) or port == 8000
    finally:
        server.terminate()
        server.wait(timeout=20)
        # The development server it started stops with it.
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_a_port_in_use_is_refused_without_claiming_the_demo_is_up(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = _serve(port, tmp_path)
        output, _ = server.communicate(timeout=60)
    assert server.returncode != 0
    assert f"Port {port} on 127.0.0.1 is already in use" in output
    assert f"PORT={port + 1} make demo" in output
    assert "The demo is up" not in output
