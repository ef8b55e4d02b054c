"""Run bench/labeling.py and print the server's CPU time per loop beside its minimal view's.

    .venv/bin/python bench/server_cpu.py --sizes 1000 --users 1,10,50 --seconds 10 \\
        --cache-url redis://127.0.0.1:6379/3 --port 8765

Takes labeling.py's arguments (``--port`` and ``--seconds`` are required here). While it runs,
every quarter second it reads the CPU time (user + system, from /proc) of the gunicorn workers
on that port and of the PostgreSQL backends of the run's scratch database. A labeling run and
its minimal run follow each other, ``--seconds`` each, after the ``member_progress`` line; the
CPU spent in the steady part of each over the requests served in it (at the rate the run
printed) gives milliseconds of server CPU per loop and per minimal request. On a machine shared
with other work, throughput swings with the load while the CPU a request costs moves much
less: their ratio estimates the loops/s ratio where the server's cores are the limit. Linux.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")
ROW = re.compile(r"\s+[\d,]+\s+(\d+) \|")
SETTLE = 1.5  # seconds left out at the start of each run


def cpu_seconds(pid: str) -> float | None:
    """User + system CPU time of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


def command_line(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmd:
            return cmd.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Sampler(threading.Thread):
    """Cumulative CPU of the gunicorn workers and of the database's backends, over time."""

    def __init__(self, port: str, database: str) -> None:
        super().__init__(daemon=True)
        self.port, self.database = port, database
        self.samples: list[tuple[float, float, float]] = []
        self.running = True

    def run(self) -> None:
        web: dict[str, float] = {}
        db: dict[str, float] = {}
        while self.running:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                cmd = command_line(pid)
                if "gunicorn" in cmd and f"127.0.0.1:{self.port}" in cmd:
                    into = web
                elif cmd.startswith("postgres: ") and f" {self.database} " in f"{cmd} ":
                    into = db
                else:
                    continue
                seconds = cpu_seconds(pid)
                if seconds is not None:
                    into[pid] = seconds  # a process that ends keeps its last reading
            self.samples.append((time.monotonic(), sum(web.values()), sum(db.values())))
            time.sleep(0.25)

    def at(self, moment: float) -> tuple[float, float, float]:
        return min(self.samples, key=lambda sample: abs(sample[0] - moment))


def main() -> int:
    args = sys.argv[1:]
    port, seconds = args[args.index("--port") + 1], float(args[args.index("--seconds") + 1])
    if seconds < 3 * SETTLE:
        raise SystemExit(f"--seconds must be at least {3 * SETTLE:g} here")
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "labeling.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    sampler = Sampler(port, f"bench_labeling_{proc.pid}")
    sampler.start()
    start = 0.0
    windows = []
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if "member_progress" in line:
            start = time.monotonic()
        row = ROW.match(line)
        if row and start:
            cells = line.split("|")
            loop_rate, minimal_rate = float(cells[1].split()[1]), float(cells[3].split()[0])
            windows.append((start, int(row.group(1)), loop_rate, minimal_rate))
    sampler.running = False
    status = proc.wait()
    print()
    for began, users, loop_rate, minimal_rate in windows:
        # Each run starts within SETTLE seconds of the progress line (the clients' first GETs
        # come before it): read the CPU of each run's steady part only, at its measured rate.
        span = seconds - SETTLE
        a, b = sampler.at(began + SETTLE), sampler.at(began + seconds)
        c, d = sampler.at(began + seconds + SETTLE), sampler.at(began + 2 * seconds)
        loops, requests = loop_rate * span, minimal_rate * span
        web_loop, db_loop = (b[1] - a[1]) / loops * 1000, (b[2] - a[2]) / loops * 1000
        web_min, db_min = (d[1] - c[1]) / requests * 1000, (d[2] - c[2]) / requests * 1000
        per_loop, per_min = web_loop + db_loop, web_min + db_min
        print(
            f"users {users:>3}: server CPU per loop {per_loop:.2f} ms (gunicorn {web_loop:.2f},"
            f" PostgreSQL {db_loop:.2f}); per minimal request {per_min:.2f} ms (gunicorn"
            f" {web_min:.2f}, PostgreSQL {db_min:.2f}); minimal / loop {per_min / per_loop:.2f}"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
