"""``manage.py demo_serve HOST:PORT``: start the development server, say where once it answers.

``make demo`` runs it after ``demo_setup``. The address is printed only when the server accepts
connections on the port it was given, so the message never names a port nothing listens on; a
port already taken is refused up front (another program answering there would look ready).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

POLL_SECONDS = 0.1


def port_free(host: str, port: int) -> bool:
    """True when nothing listens on ``host:port`` (binding it succeeds)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def port_answers(host: str, port: int) -> bool:
    """True when a connection to ``host:port`` is accepted."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def split_addrport(addrport: str) -> tuple[str, int]:
    """``"127.0.0.1:8000"`` as (host, port); a bare port means 127.0.0.1."""
    host, _, port = addrport.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise CommandError(f"{addrport!r} is not HOST:PORT with a port from 1 to 65535.")
    return host, int(port)


class Command(BaseCommand):
    help = "Start the development server and print the demo's address once it answers."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument(
            "--timeout", type=float, default=60.0, help="Seconds to wait for the server."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = split_addrport(options["addrport"])
        if not port_free(host, port):
            raise CommandError(
                f"Port {port} on {host} is already in use; start the demo on another one, "
                f"e.g. PORT={port + 1} make demo."
            )
        shown_host = f"[{host}]" if ":" in host else host
        server = subprocess.Popen(
            [sys.executable, "-m", "django", "runserver", "--noreload", f"{shown_host}:{port}"],
            env=os.environ.copy(),
        )
        # A stop request (Ctrl+C, or SIGTERM from a supervisor) stops the server as well.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            deadline = time.monotonic() + options["timeout"]
            while not port_answers(host, port):
                if server.poll() is not None:
                    raise CommandError(
                        f"The server stopped before answering (exit status {server.returncode})."
                    )
                if time.monotonic() > deadline:
                    raise CommandError(f"The server did not answer on port {port} in time.")
                time.sleep(POLL_SECONDS)
            self.stdout.write(
                self.style.SUCCESS(f"The demo is up at http://{shown_host}:{port}/")
                + "  (the logins are listed above; Ctrl+C stops the server)"
            )
            self.stdout.flush()
            server.wait()
        except KeyboardInterrupt:
            pass
        finally:
            if server.poll() is None:
                server.terminate()
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    server.kill()
