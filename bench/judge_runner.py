"""Time the judge runner against a local OpenAI-compatible server, beside a bare async loop.

    DATABASE_URL=postgres://... .venv/bin/python bench/judge_runner.py [--prompts 80]
        [--concurrency 1 16 64] [--delay 0.0] [--image-side 768] [--skip-table]
        [--replicas-capacity 4] [--replicas-delay 0.2] [--skip-replicas]
        [--prefix-prompts 20] [--prefix-window 10] [--skip-prefix]
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

Then, on fake servers only (skipped with ``--base-url``):

* replicas: fake servers that serve at most ``--replicas-capacity`` requests at once (the rest
  wait in line), each answering after ``--replicas-delay`` seconds. The runner over the version
  with one server (concurrency = capacity), then with two such servers as replicas (concurrency =
  capacity on each), then with two of which one is down (it closes every connection unanswered),
  each under a fresh model name. Calls per second are counted over the calls' span as the servers
  saw it (first request in to last answer out; the runner's setup and scoring are left out, the
  same for every run); a server can give at most capacity / delay. Between two calls on a slot
  the runner takes milliseconds of its own (reading the answer, starting the next call), and
  more with more slots: a fake server's fixed delay sends every slot's answer back at once and
  the runner's one event loop handles them in turn. The delay has to be long beside that
  turnaround for the ratio to measure the spread over replicas, hence 0.2 s by default (a real
  judge takes seconds a call). The requests served at once on average (of capacity per server)
  show what the turnaround costs.
* prefix: a version laid out as the published benchmark is (5 criteria per prompt, both orders,
  responses of a few hundred words, 1024 x 768 images), run once; the share of prompt characters
  that repeat a prefix already sent (``fake_providers.prefix_reuse_share``, images counted by
  their size in 28-px squares). That share counts a prefix sent at any earlier time, so it does
  not depend on the order of the calls; the order shows with a cache that holds only the last
  ``--prefix-window`` requests, printed for the order the server got and for a shuffled one.

The fake servers listen on 127.0.0.1, which the outbound address guard refuses by default; the
bench allows private and loopback addresses (``OUTBOUND_ALLOW_PRIVATE``) for its own process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

import httpx  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

# The servers the bench talks to are on this machine (loopback).
settings.OUTBOUND_ALLOW_PRIVATE = True

#: The words the prefix version's responses are drawn from.
_WORDS = (
    "the image shows a red bus parked beside a narrow street with two people waiting near "
    "shop window sign reading open above door while cyclist passes left edge frame light "
    "suggests late afternoon shadows long building brick facade three floors balcony plants"
)


def build_version(
    n_prompts: int,
    image_size: tuple[int, int],
    *,
    slug: str = "runner-bench",
    response_words: int = 0,
):
    """A ready version of ``n_prompts`` x 5 open-ended criteria, a PNG image per prompt.

    ``response_words`` 0: short responses that change with the criterion (the timing version);
    above 0: each prompt's two responses of about that many words, the same for its 5 criteria
    (the published benchmark's layout).
    """
    import hashlib

    from django.core.files.base import ContentFile

    from annotation.models import Criterion, Sample
    from annotation.services.projects import project_create
    from tests.judging.runner_data import png_bytes
    from tests.judging.web_data import version_from_records

    project = project_create(name=f"Runner bench {slug}", slug=slug)
    criteria = list(
        Criterion.objects.filter(project=project, split="open_ended").values_list("key", flat=True)
    )[:5]
    records = []
    for p in range(n_prompts):
        prompt = f"p{p}"
        data = png_bytes(*image_size, color=(p % 255, 90, 160))
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
        if response_words:
            rng, words = random.Random(p), _WORDS.split()
            long_a = " ".join(rng.choices(words, k=response_words)) + "."
            long_b = " ".join(rng.choices(words, k=response_words * 4 // 5)) + "."
        for i, criterion in enumerate(criteria):
            if response_words:
                pred_a, pred_b = long_a, long_b
            else:
                pred_a = "A short answer." if (p + i) % 2 else "A longer answer " * 8
                pred_b = "Another short answer." if (p + i) % 3 else "Much longer " * 9
            records.append(
                {
                    "question_id": f"{prompt}__{criterion}",
                    "prompt_id": prompt,
                    "split": "open_ended",
                    "criterion": criterion,
                    "question": f"What does image {p} show? Answer in two sentences.",
                    "pred_a": pred_a,
                    "pred_b": pred_b,
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


def timing_table(version, args) -> None:
    """Floor, runner and cached re-run per concurrency (the bench's first table)."""
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
    try:
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
    finally:
        if fake is not None:
            fake.__exit__(None, None, None)


def served_rate(servers) -> tuple[int, float, float]:
    """(answered requests, their calls per second over the span the servers saw them in, the
    requests being served at once on average over that span)."""
    records = [r for s in servers for r in s.requests]
    answered = sum(1 for r in records if r.status == 200)
    span = max(r.finished for r in records) - min(r.started for r in records)
    if span <= 0:
        return answered, 0.0, 0.0
    busy = sum(r.finished - r.served for r in records if r.served)
    return answered, answered / span, busy / span


def replicas_run(version, args, label: str, servers, down=None):
    """The runner over ``version`` on ``servers`` (the first as base_url) under a fresh model;
    (result, calls/s as the servers saw them, requests served at once on average, wall
    seconds)."""
    from judging.models import JudgeConfig
    from judging.runner.run import judge_run_execute

    config = JudgeConfig(
        name=f"bench-replicas-{label}",
        base_url=servers[0].url,
        replica_urls=[s.url for s in servers[1:]],
        model=f"{args.model}-replicas-{label}",
        concurrency=args.replicas_capacity,
        max_tokens=64,
        retries=2,
    )
    start = time.perf_counter()
    result = judge_run_execute(version=version, config=config, judge=config.name)
    wall = time.perf_counter() - start
    assert result.made == result.calls, "a replicas run should ask every call"
    up = [s for s in servers if s is not down]
    answered, rate, busy = served_rate(up)
    assert answered == result.calls - result.failed
    return result, rate, busy, wall


def replicas_lines(version, args) -> None:
    """One server, two replicas, two replicas with one down."""
    from tests.judging.fake_openai import FakeOpenAI

    capacity, delay = args.replicas_capacity, args.replicas_delay

    def server() -> FakeOpenAI:
        return FakeOpenAI(capacity=capacity, delay=delay)

    with server() as one:
        _, single, single_busy, single_wall = replicas_run(version, args, "1", [one])
    with server() as first, server() as second:
        _, double, double_busy, double_wall = replicas_run(version, args, "2", [first, second])
        split = (len(first.requests), len(second.requests))
    with server() as down, server() as good:
        down.down(close=True)
        result, degraded, _, _ = replicas_run(version, args, "down", [down, good], down=down)
        down_got = len(down.requests)
    print(
        f"replicas: 1 server {single:.1f} calls/s, 2 replicas {double:.1f} calls/s, "
        f"ratio {double / single:.2f} (goal >= 1.8)"
    )
    n = version.row_count
    print(
        f"  each server serves {capacity} at once, {delay * 1000:.0f} ms a call: at most "
        f"{capacity / delay:.0f} calls/s; {n:,} calls a run, split {split[0]} / {split[1]} "
        f"over the two; served at once on average {single_busy:.2f} of {capacity} and "
        f"{double_busy:.2f} of {2 * capacity}; whole runs (setup and scoring too) "
        f"{n / single_wall:.1f} and {n / double_wall:.1f} calls/s"
    )
    print(
        f"  2 replicas, one down (closing every connection): {degraded:.1f} calls/s, run "
        f"complete ({result.calls - result.failed:,} of {result.calls:,} calls answered, "
        f"{result.failed} failed); the down one got {down_got} requests"
    )


def windowed_share(prompts: list[str], window: int) -> float:
    """The share of prompt characters that repeat a prefix of one of the ``window`` prompts
    just before (a prefix cache that holds only the last ``window`` requests)."""
    from tests.judging.fake_providers import common_prefix

    total = sum(len(p) for p in prompts)
    reused = sum(
        max((common_prefix(p, q) for q in prompts[max(0, i - window) : i]), default=0)
        for i, p in enumerate(prompts)
    )
    return reused / total if total else 0.0


def prefix_lines(args) -> None:
    """The share of prompt characters a prefix cache could reuse, on the published layout."""
    from judging.models import JudgeConfig
    from judging.runner.run import judge_run_execute
    from tests.judging.fake_openai import FakeOpenAI, prefix_reuse_share

    version = build_version(
        args.prefix_prompts, (1024, 768), slug="runner-bench-prefix", response_words=300
    )
    config = JudgeConfig(
        name="bench-prefix",
        base_url="",
        model=f"{args.model}-prefix",
        concurrency=4,
        max_tokens=64,
        retries=2,
        orders=JudgeConfig.Orders.BOTH,
    )
    with FakeOpenAI() as server:
        config.base_url = server.url
        judge_run_execute(version=version, config=config, judge=config.name)
        prompts = [r.prompt() for r in sorted(server.requests, key=lambda r: r.started)]
    shuffled = prompts[:]
    random.Random(0).shuffle(shuffled)
    window = args.prefix_window
    print(
        f"prefix reuse share {prefix_reuse_share(prompts):.3f} (goal >= 0.8 at 5 criteria x 2 "
        f"orders); shuffled {prefix_reuse_share(shuffled):.3f}"
    )
    print(
        f"  {len(prompts):,} calls ({args.prefix_prompts} prompts x 5 criteria x 2 orders, "
        f"{sum(map(len, prompts)) // len(prompts):,} prompt characters a call); with a cache "
        f"of the last {window} requests: as sent {windowed_share(prompts, window):.3f}, "
        f"shuffled {windowed_share(shuffled, window):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=80, help="prompts (x 5 criteria = rows)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--delay", type=float, default=0.0, help="fake server latency, seconds")
    parser.add_argument("--image-side", type=int, default=768)
    parser.add_argument("--skip-table", action="store_true", help="no floor/runner table")
    parser.add_argument(
        "--replicas-capacity", type=int, default=4, help="requests a replica serves at once"
    )
    parser.add_argument(
        "--replicas-delay", type=float, default=0.2, help="a replica's latency, seconds"
    )
    parser.add_argument("--skip-replicas", action="store_true")
    parser.add_argument(
        "--prefix-prompts", type=int, default=20, help="prompts of the prefix version"
    )
    parser.add_argument(
        "--prefix-window", type=int, default=10, help="requests a bounded prefix cache holds"
    )
    parser.add_argument("--skip-prefix", action="store_true")
    parser.add_argument("--base-url", help="a real server instead of the fake one")
    parser.add_argument("--model", default="bench-model")
    parser.add_argument("--api-key-env", default="")
    args = parser.parse_args()

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    import tempfile

    settings.MEDIA_ROOT = tempfile.mkdtemp(prefix="runner-bench-")
    try:
        version = build_version(args.prompts, (args.image_side, args.image_side * 3 // 4))
        if not args.skip_table:
            timing_table(version, args)
        if not args.base_url and not args.skip_replicas:
            replicas_lines(version, args)
        if not args.base_url and not args.skip_prefix:
            prefix_lines(args)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
