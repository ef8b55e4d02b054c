"""Races for the last open slots on PostgreSQL (threads) and SQLite (processes on a file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from annotation.models import Choice, Project, ProjectMember, Slot, Vote
from annotation.services import voting, work, work_types

from .race import RATIONALE, race_check, race_setup, racer

RACERS = 24
SAMPLES = 6  # 18 slots for 24 annotators asking for 2 samples each

needs_postgres = pytest.mark.skipif(
    settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
    reason="this race runs on PostgreSQL (set DATABASE_URL)",
)


def run_threads(target, args_list):
    barrier = threading.Barrier(len(args_list))
    results = [None] * len(args_list)

    def run(i, args):
        barrier.wait()
        results[i] = target(*args)

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(args_list)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return results


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_postgres_race_for_the_last_slots():
    setup = race_setup(racers=RACERS, samples=SAMPLES)
    results = run_threads(racer, [(setup["project_id"], uid) for uid in setup["user_ids"]])
    report = race_check(setup["project_id"], results)
    assert report["problems"] == []
    assert report["votes"] == report["expected_votes"] == SAMPLES * 3 * 5
    assert report["samples_complete"] == SAMPLES
    assert Slot.objects.filter(completed_at__isnull=False).count() == SAMPLES * 3


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_postgres_race_of_one_annotator_for_the_last_tie():
    """Ten tabs of one annotator try a tie at once: the cap lets exactly one through."""
    setup = race_setup(racers=1, samples=10, batch_size=10, k=1)
    project = Project.objects.get(pk=setup["project_id"])
    user = ProjectMember.objects.get(project=project).user
    items = []
    for _ in range(10):  # 10 A votes: one tie available
        item = work.work_next(project=project, annotator=user)
        voting.vote_submit(
            project=project,
            annotator=user,
            sample_id=item.sample.pk,
            criterion_id=item.criterion.pk,
            shown_choice="A",
            rationale=RATIONALE,
            seconds=1,
        )
    assert voting.tie_allowance(project=project, annotator=user) == 1
    voted = set(Vote.objects.filter(annotator=user).values_list("sample_id", "criterion_id"))
    for slot in Slot.objects.filter(annotator=user):
        for criterion in project.criteria.filter(split="open_ended"):
            if (slot.sample_id, criterion.pk) not in voted and len(items) < 10:
                items.append((slot.sample_id, criterion.pk))

    def tie(sample_id, criterion_id):
        try:
            voting.vote_submit(
                project=project,
                annotator=user,
                sample_id=sample_id,
                criterion_id=criterion_id,
                shown_choice="tie",
                rationale=RATIONALE,
                seconds=1,
            )
            return "ok"
        except work_types.VoteRejected:
            return "refused"
        finally:
            connection.close()

    outcomes = run_threads(tie, items)
    assert sorted(outcomes) == ["ok"] + ["refused"] * 9
    assert Vote.objects.filter(annotator=user, choice=Choice.TIE).count() == 1


def test_sqlite_race_for_the_last_slots(tmp_path: Path):
    """24 processes against one SQLite file (IMMEDIATE transactions, busy timeout)."""
    db = tmp_path / "race.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "VAR_DIR": str(tmp_path)}
    env.pop("CELERY_BROKER_URL", None)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "tests.annotation.race_sqlite", str(RACERS), str(SAMPLES)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["problems"] == [], report["problems"][:3]
    assert report["exit_codes"] == [0] * RACERS
    assert report["votes"] == report["acked"] == report["expected_votes"] == SAMPLES * 3 * 5
    assert report["samples_complete"] == SAMPLES
