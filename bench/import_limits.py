"""Time how fast hostile import files are refused, beside the least work that refusal needs.

    DATABASE_URL=postgres://... .venv/bin/python bench/import_limits.py [--line-mb 400]

Builds a throwaway test database (``test_<name>``, dropped at the end), then imports:

- a small zip whose data file is one JSON line of ``--line-mb`` MB (the issue's 0.4 MB zip
  with a 400 MB line), refused as "line 1 longer than 16 MB";
- a JSONL file of 100,000-deep JSON lines, refused line by line.

Beside each it prints a floor measured in the same run: unpacking the zip member in chunks
(what any reader must do to find the end of the line), and ``json.loads`` refusing the same
lines. Peak memory growth shows the long line is never held whole.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bomb_zip(path: Path, line_mb: int) -> Path:
    chunk = b"a" * 2**20
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("data.jsonl", "w") as member,
    ):
        member.write(b'{"id": "x", "question": "')
        for _ in range(line_mb):
            member.write(chunk)
        member.write(b'"}\n')
    return path


def unpack_floor(path: Path) -> float:
    started = time.perf_counter()
    with zipfile.ZipFile(path) as archive, archive.open("data.jsonl") as member:
        while member.read(2**20):
            pass
    return time.perf_counter() - started


def refusal(fn) -> tuple[float, float, str]:
    from annotation.importing.errors import ImportRejected

    before = peak_mb()
    started = time.perf_counter()
    try:
        fn()
    except ImportRejected as exc:
        first = str(exc.problems[0])
    else:
        raise SystemExit("the file was accepted")
    return time.perf_counter() - started, peak_mb() - before, first


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--line-mb", type=int, default=400)
    parser.add_argument("--deep-lines", type=int, default=200)
    args = parser.parse_args()

    setup_test_environment()
    settings.DEBUG = False
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings.MEDIA_ROOT = Path(tmp) / "media"
            from annotation.importing.service import samples_import
            from annotation.services.projects import project_create

            project = project_create(name="Bench limits", slug="bench-limits")
            zip_path = bomb_zip(Path(tmp) / "bomb.zip", args.line_mb)
            size_kb = zip_path.stat().st_size / 1024
            floor = unpack_floor(zip_path)
            seconds, memory, first = refusal(lambda: samples_import(project=project, path=zip_path))
            print(
                f"zip of {size_kb:.0f} KB, one {args.line_mb} MB line: refused in {seconds:6.2f} s "
                f"(floor: unpacking the member {floor:6.2f} s), peak RSS +{memory:.0f} MB: {first}"
            )

            deep = "[" * 100_000 + "]" * 100_000
            jsonl_path = Path(tmp) / "deep.jsonl"
            jsonl_path.write_text((deep + "\n") * args.deep_lines)
            started = time.perf_counter()
            for _ in range(args.deep_lines):
                with contextlib.suppress(RecursionError):
                    json.loads(deep)
            floor = time.perf_counter() - started
            seconds, memory, first = refusal(
                lambda: samples_import(project=project, path=jsonl_path)
            )
            print(
                f"{args.deep_lines} lines of 100,000-deep JSON: refused in {seconds:6.2f} s "
                f"(floor: json.loads failing on them {floor:6.2f} s): {first}"
            )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
