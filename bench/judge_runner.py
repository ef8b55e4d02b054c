"""Time the judge runner against a local OpenAI-compatible server, beside a bare async loop.

    DATABASE_URL=postgres://... .venv/bin/python bench/judge_runner.py [--prompts 80]
        [--concurrency 1 16 64] [--delay 0.0] [--image-side 768]
        [--base-url URL --model NAME [--api-key-env VAR]]

Builds a throwaway test database (``test_<name>``, dropped at the end) with a ready dataset
version of N prompts x 5 open-ended criteria, each prompt with a PNG image. Without
``--base-url`` it starts the test suite's fake server (``tests/judging/fake_openai.py``) on
127.0.0.1, answering after ``--delay`` seconds. For each concurrency it runs:

* the floor: a bare ``httpx.AsyncClient`` loop sending the same request bodies (built before the
  clock starts) with the same number in flight, doing nothing with the answers;
* the runner: ``judge_run_execute`` over the version (building each request with its image,
  parsing, storing every call, scoring), under a fresh model name so nothing comes from the cache;
* the runner again with the same config: every answer from the cache, no request.

Prints rows per second for each and the runner's overhead per call: (runner time - floor time)
/ calls. With ``--base-url`` the same runs go to that server (a vLLM server, say); mind its cost.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

import httpx  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402


def build_version(n_prompts: int, image_side: int):
    import hashlib

    from django.core.files.base import ContentFile

    from annotation.models import Criterion, Sample
    from annotation.services.projects import project_create
    from tests.judging.runner_data import png_bytes
    from tests.judging.web_data import version_from_records

    project = project_create(name="Runner bench", slug="runner-bench")
    criteria = list(
        Criterion.objects.filter(project=project, split="open_ended").values_list("key", flat=True)
    )[:5]
    records = []
    for p in range(n_prompts):
        prompt = f"p{p}"
        data = png_bytes(image_side, image_side * 3 // 4, color=(p % 255, 90, 160))
        sample = Sample.objects.create(
            project=project,
            external_id=prompt,
            split="open_ended",
            question=f"Question {p}",
            response_a="a",
            response_b="b",
            image_sha256=hashlib.sha256(data).hexdigest(),
        )
        sample.image.save(f"{prompt}.png", ContentFile(data), save=True)
        for i, criterion in enumerate(criteria):
            records.append(
                {
                    "question_id": f"{prompt}__{criterion}",
                    "prompt_id": prompt,
                    "split": "open_ended",
                    "criterion": criterion,
                    "question": f"What does image {p} show? Answer in two sentences.",
                    "pred_a": "A short answer." if (p + i) % 2 else "A longer answer " * 8,
                    "pred_b": "Another short answer." if (p + i) % 3 else "Much longer " * 9,
                    "model_a": "x",
                    "model_b": "y",
                    "preference": "model_a" if (p + i) % 2 else "model_b",
                }
            )
    return version_from_records(project, records)


async def bare_loop(url: str, bodies: list[dict], concurrency: int, api_key: str | None) -> float:
    """Seconds to send every body with ``concurrency`` in flight, answers read and dropped."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    queue: asyncio.Queue[dict] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    async with httpx.AsyncClient(
        headers=headers, limits=limits, timeout=120, trust_env=False
    ) as client:

        async def worker() -> None:
            while not queue.empty():
                body = queue.get_nowait()
                response = await client.post(url, json=body)
                response.json()

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=80, help="prompts (x 5 criteria = rows)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--delay", type=float, default=0.0, help="fake server latency, seconds")
    parser.add_argument("--image-side", type=int, default=768)
    parser.add_argument("--base-url", help="a real server instead of the fake one")
    parser.add_argument("--model", default="bench-model")
    parser.add_argument("--api-key-env", default="")
    args = parser.parse_args()

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    import tempfile

    from django.conf import settings

    settings.MEDIA_ROOT = tempfile.mkdtemp(prefix="runner-bench-")
    try:
        from judging.models import JudgeConfig
        from judging.runner.engine import Task
        from judging.runner.run import (
            body_maker,
            client_settings,
            config_template,
            judge_run_execute,
            keys_for,
            version_calls,
        )
        from tests.judging.fake_openai import FakeOpenAI

        version = build_version(args.prompts, args.image_side)
        fake = None if args.base_url else FakeOpenAI(delay=args.delay).__enter__()
        base_url = args.base_url or fake.url
        print(
            f"{version.row_count:,} rows, images {args.image_side} px, server "
            f"{f'fake (delay {args.delay:.3f} s)' if fake else base_url}"
        )
        print(
            f"{'concurrency':>11} {'floor rows/s':>13} {'runner rows/s':>14} "
            f"{'cached rows/s':>14} {'overhead ms/call':>17}"
        )
        for concurrency in args.concurrency:
            config = JudgeConfig(
                name=f"bench-{concurrency}",
                base_url=base_url,
                model=f"{args.model}" if args.base_url else f"{args.model}-{concurrency}",
                api_key_env=args.api_key_env,
                concurrency=concurrency,
                max_tokens=64,
                retries=2,
            )
            template = config_template(config)
            calls = version_calls(version, config)
            make = body_maker(config, template)
            keys = keys_for(calls, config, template)
            bodies = [make(Task(k, c)) for k, c in zip(keys, calls, strict=True)]
            settings_ = client_settings(config)
            # A warm-up, then the floor: the better of two passes (a shared machine is noisy).
            asyncio.run(bare_loop(settings_.endpoint, bodies[:8], 1, settings_.api_key))
            floor = min(
                asyncio.run(bare_loop(settings_.endpoint, bodies, concurrency, settings_.api_key))
                for _ in range(2)
            )
            start = time.perf_counter()
            result = judge_run_execute(version=version, config=config, judge=config.name)
            runner = time.perf_counter() - start
            start = time.perf_counter()
            again = judge_run_execute(version=version, config=config, judge=config.name)
            cached = time.perf_counter() - start
            n = result.calls
            assert again.made == 0, "the second run should come from the cache"
            print(
                f"{concurrency:>11} {n / floor:>13.1f} {n / runner:>14.1f} {n / cached:>14.1f} "
                f"{1000 * (runner - floor) / n:>17.2f}"
            )
        if fake is not None:
            fake.__exit__(None, None, None)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
