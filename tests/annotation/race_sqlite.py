"""Race annotator processes for the last open slots on a SQLite file database.

Run as ``DATABASE_URL=sqlite:////path/race.sqlite3 python -m tests.annotation.race_sqlite N S``:
migrates the file, builds a project with S samples, forks N racer processes that start
together, checks the invariants and prints them as JSON on the last line.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from tests.annotation.race import race_check, race_setup, racer

    racers, samples = int(sys.argv[1]), int(sys.argv[2])
    call_command("migrate", verbosity=0)
    setup = race_setup(racers=racers, samples=samples)
    connections.close_all()  # children must not share the parent's connection

    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(racers)
    queue = context.Queue()

    def run(user_id: int) -> None:
        barrier.wait()
        queue.put(racer(setup["project_id"], user_id))

    procs = [context.Process(target=run, args=(uid,)) for uid in setup["user_ids"]]
    for proc in procs:
        proc.start()
    results = [queue.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    report = race_check(setup["project_id"], results)
    report["exit_codes"] = [proc.exitcode for proc in procs]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
