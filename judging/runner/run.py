"""A judge run over a dataset version: build the calls, skip those in the cache, make the rest,
store each answer as it comes, then score the run like an upload.

Resumable: every answer is committed as soon as it arrives (``JudgeCall``, keyed by the exact
cache key), so a killed worker's next attempt, or the same command again, finds them and asks
only what is missing; at most the calls that were in flight are asked twice. A cancel stops the
calls and keeps what was answered. At the token budget no new call starts; the calls in flight
finish, and the partial run is scored and marked partial.
"""

from __future__ import annotations

import functools
import itertools
import os
import queue
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Max

from aggregation.models import DatasetRow, DatasetVersion
from annotation.models import Criterion, Sample
from core.models import Job
from core.outbound import api_key_env_problem, base_url_problem
from judging.metrics import INVALID_LABEL
from judging.models import JudgeCall, JudgeConfig, JudgeRun, Prediction, Scorecard
from judging.prompt import DEFAULT_TEMPLATE, PromptTemplate, template_from_text
from judging.services.scoring import scorecard_compute

from .cache import call_key, normalise_base_url
from .client import ClientSettings
from .dialects import dialect_for
from .engine import FAILED, TRUNCATED, UNPARSED, Answer, Engine, Task, VerifierSpec
from .estimate import Estimate, estimate_run
from .figures import CallRecord, combine_orders, cost_of, split_figures
from .requests import (
    GenerationSettings,
    RowCall,
    chat_body,
    image_data_url,
    image_sha256,
    key_parts,
)

Progress = Callable[..., None]
KIND = JudgeCall.Kind.CRITERION
#: Outputs longer than this are stored whole and shown cut to this many characters.
OUTPUT_SHOWN_CHARS = 2000
_CHUNK = 1000
_FAILURES_LISTED = 20
_UNPARSABLE_LISTED = 1000
_DRAIN_SECONDS = 0.2


class RunnerError(ValueError):
    """A run that cannot start or produced nothing to score; ``field`` names the setting."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(message)


def shown_output(text: str) -> str:
    """An output as pages show it: cut to ``OUTPUT_SHOWN_CHARS`` with the cut said."""
    if len(text) <= OUTPUT_SHOWN_CHARS:
        return text
    return text[:OUTPUT_SHOWN_CHARS] + f"… ({len(text) - OUTPUT_SHOWN_CHARS:,} more characters)"


def config_template(config: JudgeConfig) -> PromptTemplate:
    """The config's prompt template (its stored text, else the default file)."""
    if not config.template_text.strip():
        return DEFAULT_TEMPLATE
    return template_from_text(config.template_text, name=config.template_name or "template")


def api_key(config: JudgeConfig) -> str | None:
    """The API key from the environment variable the config names (None when none is named).

    Only names the operator allows are read (``core.outbound.api_key_env_problem``), so a config
    cannot send another secret of the worker's environment to a server of its choosing.
    """
    name = config.api_key_env.strip()
    if not name:
        return None
    problem = api_key_env_problem(name)
    if problem:
        raise RunnerError(problem, field="api_key_env")
    value = os.environ.get(name)
    if not value:
        raise RunnerError(
            f"the environment variable {name} is not set (it should hold the API key)",
            field="api_key_env",
        )
    return value


def generation(config: JudgeConfig) -> GenerationSettings:
    return GenerationSettings(
        model=config.model,
        temperature=config.temperature,
        top_p=config.top_p,
        max_tokens=config.max_tokens,
        seed=config.seed,
        reasoning_effort=config.reasoning_effort,
        chat_template_kwargs=dict(config.chat_template_kwargs or {}),
        extra_body=dict(config.extra_body or {}),
        runs=config.runs,
        fixed_sampling=dialect_for(config.api_style).fixed_sampling,
    )


def client_settings(config: JudgeConfig) -> ClientSettings:
    for url in config.urls:
        problem = base_url_problem(url)
        if problem:
            raise RunnerError(f"{url[:80]}: {problem}", field="base_url")
    return ClientSettings(
        base_url=normalise_base_url(config.base_url),
        replicas=tuple(normalise_base_url(u) for u in config.replica_urls or []),
        api_key=api_key(config),
        timeout=config.timeout_seconds,
        retries=config.retries,
        concurrency=config.concurrency,
        rpm=config.rpm,
        dialect=config.api_style,
        api_version=config.api_version,
        model=config.model,
    )


def _price(value: Any) -> float | None:
    return None if value is None else float(value)


def orders_of(config: JudgeConfig) -> tuple[str, ...]:
    return ("ab", "ba") if config.orders == JudgeConfig.Orders.BOTH else ("ab",)


def version_calls(version: DatasetVersion, config: JudgeConfig) -> list[RowCall]:
    """Every (row, run, order) call of the version, rows grouped by prompt (images reused)."""
    rows = list(
        DatasetRow.objects.filter(version=version)
        .order_by("prompt_id", "id")
        .values_list("question_id", "prompt_id", "split", "criterion", "data")
    )
    if not rows:
        raise RunnerError(f"dataset version {version.number} has no rows", field="version")
    criteria = {
        (c.split, c.key): (c.name, c.description)
        for c in Criterion.objects.filter(project=version.project)
    }
    prompts = {prompt for _, prompt, _, _, _ in rows}
    images: dict[str, tuple[str, str]] = {}
    for sample in Sample.objects.filter(project=version.project, external_id__in=prompts).only(
        "external_id", "image", "image_sha256"
    ):
        if sample.image:
            sha = sample.image_sha256
            if not sha:
                with default_storage.open(sample.image.name, "rb") as handle:
                    sha = image_sha256(handle.read())
            images[sample.external_id] = (sample.image.name, sha)
    calls = []
    by_prompt: dict[str, list[tuple]] = {}
    for row in rows:
        by_prompt.setdefault(row[1], []).append(row)
    # A prompt's calls back to back, its criteria last: the calls of one run and order share
    # everything but the criterion, so a server with prefix caching reuses their prefill.
    for prompt, prompt_rows in by_prompt.items():
        image_name, sha = images.get(prompt, ("", ""))
        for run, order, (qid, _, split, criterion, data) in itertools.product(
            range(1, config.runs + 1), orders_of(config), prompt_rows
        ):
            name, description = criteria.get((split, criterion), (criterion, ""))
            calls.append(
                RowCall(
                    question_id=qid,
                    split=split,
                    criterion=criterion,
                    criterion_name=name,
                    criterion_description=description,
                    question=str(data.get("question") or ""),
                    response_a=str(data.get("pred_a") or ""),
                    response_b=str(data.get("pred_b") or ""),
                    image_name=image_name,
                    image_sha256=sha,
                    run_index=run,
                    order=order,
                )
            )
    return calls


def keys_for(
    calls: list[RowCall], config: JudgeConfig, template: PromptTemplate, *, kind: str = KIND
) -> list[str]:
    """The cache key of every call."""
    settings = generation(config)
    return [
        call_key(
            key_parts(
                call,
                kind=kind,
                template_hash=template.sha256,
                settings=settings,
                image_max_side=config.image_max_side,
            )
        )
        for call in calls
    ]


def calls_by_key(keys: Iterable[str], *, answered_only: bool = False) -> dict[str, JudgeCall]:
    """The stored calls among ``keys`` (``answered_only``: leave failed ones out)."""
    keys = list(keys)
    found: dict[str, JudgeCall] = {}
    for start in range(0, len(keys), _CHUNK):
        query = JudgeCall.objects.filter(key__in=keys[start : start + _CHUNK])
        if answered_only:
            query = query.exclude(parse_method=FAILED)
        found.update((call.key, call) for call in query)
    return found


def stored_calls(keys: Iterable[str], *, retry_truncated: bool = False) -> dict[str, JudgeCall]:
    """The answered calls among ``keys`` (a failed call is asked again, so it is left out; so is
    a truncated one when ``retry_truncated``: the config now allows a larger budget)."""
    found = calls_by_key(keys, answered_only=True)
    if retry_truncated:
        found = {k: c for k, c in found.items() if c.parse_method != TRUNCATED}
    return found


def body_maker(config: JudgeConfig, template: PromptTemplate) -> Callable[[Task], dict[str, Any]]:
    """Builds a task's request body; each image is read and encoded once while it is reused."""
    settings = generation(config)

    @functools.lru_cache(maxsize=8)
    def data_url(name: str) -> str:
        with default_storage.open(name, "rb") as handle:
            return image_data_url(handle.read(), config.image_max_side)

    def make(task: Task) -> dict[str, Any]:
        call = task.call
        url = data_url(call.image_name) if call.image_name else None
        return chat_body(call, template=template, settings=settings, image_url=url)

    return make


def _verifier(config: JudgeConfig) -> VerifierSpec | None:
    verifier = config.verifier
    if verifier is None:
        return None
    return VerifierSpec(client=client_settings(verifier), generation=generation(verifier))


def _record(answer: Answer, config: JudgeConfig, kind: str) -> JudgeCall:
    call, outcome = answer.task.call, answer.outcome
    verifier = answer.verifier
    return JudgeCall(
        key=answer.task.key,
        kind=kind,
        base_url=outcome.base_url or normalise_base_url(config.base_url),
        model=config.model,
        order=call.order,
        run_index=call.run_index,
        image_sha256=call.image_sha256,
        raw_output=outcome.text,
        reasoning_output=outcome.reasoning,
        reasoning_tokens=outcome.reasoning_tokens,
        verdict=answer.verdict or "",
        parse_method=answer.parse_method,
        verifier_output=verifier.text if verifier else "",
        latency_ms=outcome.latency_ms,
        prompt_tokens=outcome.prompt_tokens + (verifier.prompt_tokens if verifier else 0),
        completion_tokens=outcome.completion_tokens
        + (verifier.completion_tokens if verifier else 0),
        finish_reason=outcome.finish_reason,
        attempts=outcome.attempts,
        error=outcome.error,
    )


_UPDATED = [f.name for f in JudgeCall._meta.concrete_fields if f.name not in ("id", "key")]


def store_answers(answers: list[Answer], config: JudgeConfig, kind: str = KIND) -> None:
    """Write answers at once (autocommit): a later failure never loses them."""
    JudgeCall.objects.bulk_create(
        [_record(a, config, kind) for a in answers],
        update_conflicts=True,
        unique_fields=["key"],
        update_fields=_UPDATED,
    )


@dataclass
class Tally:
    """What the calls of this run have cost so far."""

    made: int = 0
    failed: int = 0
    truncated: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, answers: list[Answer]) -> None:
        for answer in answers:
            self.made += 1
            self.failed += answer.parse_method == FAILED
            self.truncated += answer.parse_method == TRUNCATED
            self.prompt_tokens += answer.outcome.prompt_tokens
            self.completion_tokens += answer.outcome.completion_tokens
            if answer.verifier is not None:
                self.prompt_tokens += answer.verifier.prompt_tokens
                self.completion_tokens += answer.verifier.completion_tokens

    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.made / elapsed if elapsed > 0 else 0.0


def progress_line(tally: Tally, cached: int, config: JudgeConfig) -> str:
    """``calls/s · tokens · cost · cache hits`` (the bar and the job card show done/total)."""
    cost = cost_of(
        tally.prompt_tokens,
        tally.completion_tokens,
        _price(config.price_input_per_million),
        _price(config.price_output_per_million),
    )
    parts = [
        f"{tally.rate():.1f} calls/s",
        f"{tally.tokens:,} tokens",
    ]
    if cost is not None:
        parts.append(f"{cost:.4f} {config.currency}")
    parts.append("1 cache hit" if cached == 1 else f"{cached:,} cache hits")
    if tally.failed:
        parts.append("1 failed" if tally.failed == 1 else f"{tally.failed:,} failed")
    if tally.truncated:
        parts.append(f"{tally.truncated:,} truncated")
    return " · ".join(parts)


def _drain(answers: queue.Queue[Answer], wait: float) -> list[Answer]:
    out: list[Answer] = []
    try:
        out.append(answers.get(timeout=wait))
        while True:
            out.append(answers.get_nowait())
    except queue.Empty:
        return out


@dataclass
class CallsOutcome:
    """The calls of a run after the engine stopped."""

    tally: Tally
    cached: int
    stop_reason: str = ""
    #: What the client learnt of refused parameters, each as ``Adaptation.as_dict``.
    adaptations: list[dict[str, str]] = field(default_factory=list)


def make_calls(
    tasks: list[Task],
    *,
    config: JudgeConfig,
    template: PromptTemplate,
    total: int,
    cached: int,
    progress: Progress,
    kind: str = KIND,
    make_body: Callable[[Task], dict[str, Any]] | None = None,
    transport: Any = None,
) -> CallsOutcome:
    """Make ``tasks``, storing each answer as it comes; ``progress`` may raise to stop."""
    tally = Tally()
    outcome = CallsOutcome(tally=tally, cached=cached)
    if not tasks:
        return outcome
    engine = Engine(
        tasks,
        make_body=make_body or body_maker(config, template),
        client=client_settings(config),
        verifier=_verifier(config),
        transport=transport,
        budget_tokens=config.budget_tokens,
        retry_max_tokens=config.retry_max_tokens,
    ).start()
    budget = config.budget_tokens
    try:
        while True:
            running = engine.running()
            batch = _drain(engine.answers, _DRAIN_SECONDS)
            if batch:
                store_answers(batch, config, kind)
                tally.add(batch)
            if engine.budget_reached and not outcome.stop_reason:
                outcome.stop_reason = (
                    f"Stopped at the token budget: {tally.tokens:,} tokens used of "
                    f"{budget:,}; the rows not asked count as missing."
                )
            done = cached + tally.made
            progress(done, total, progress_line(tally, cached, config))
            if not running and engine.answers.empty():
                break
    except BaseException:
        engine.abort()
        engine.join(10)
        rest = _drain(engine.answers, 0)
        if rest:  # answered before the stop: kept
            store_answers(rest, config, kind)
        raise
    engine.join()
    outcome.adaptations = [a.as_dict() for a in engine.adaptations]
    if engine.error is not None:
        raise engine.error
    return outcome


@dataclass
class RunResult:
    """A finished judge run: its runs on the leaderboard and what it cost."""

    judge: str
    runs: list[JudgeRun]
    scorecards: list[Scorecard]
    estimate: Estimate
    calls: int
    made: int
    cached: int
    failed: int
    tokens: int
    cost: float | None
    partial: bool
    stop_reason: str
    failures: list[dict[str, Any]]
    currency: str = ""
    truncated: int = 0
    warnings: list[str] = field(default_factory=list)
    #: The first truncated answers (question id, run, order, tokens).
    truncated_rows: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> str:
        """One paragraph for a person."""
        made = "1 call made" if self.made == 1 else f"{self.made:,} calls made"
        hits = "1 cache hit" if self.cached == 1 else f"{self.cached:,} cache hits"
        text = f"Scored {self.judge}: {self.calls:,} calls ({made}, {hits}), {self.tokens:,} tokens"
        if self.cost is not None:
            text += f", cost {self.cost:.4f} {self.currency}".rstrip()
        text += "."
        if self.failed:
            text += (
                " 1 call failed after its retries (its row counts as missing)."
                if self.failed == 1
                else f" {self.failed:,} calls failed after their retries (their rows count "
                "as missing)."
            )
        if self.truncated:
            text += (
                f" {self.truncated:,} answers were cut at the token budget before their verdict "
                "(truncated: counted as wrong and listed apart; raise max tokens)."
            )
        extra = [w for w in self.warnings if w != self.stop_reason]
        if self.stop_reason:
            text += f" {self.stop_reason}"
        if extra:
            text += " " + " ".join(extra)
        if self.partial:
            text += " The scorecard is marked partial."
        return text


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


def judge_run_execute(
    *,
    version: DatasetVersion,
    config: JudgeConfig,
    judge: str = "",
    by: Any = None,
    job: Job | None = None,
    progress: Progress | None = None,
    on_estimate: Callable[[Estimate], None] | None = None,
    transport: Any = None,
) -> RunResult:
    """Run ``config`` over every row of ``version`` and score it as the judge ``judge``."""
    progress = progress or _noop
    if version.status != DatasetVersion.Status.READY:
        raise RunnerError(
            f"version {version.number} is {version.get_status_display().lower()}; "
            "a judge runs on a ready version",
            field="version",
        )
    judge = (judge or config.name or config.model).strip()
    template = config_template(config)
    client_settings(config)  # refuse a missing API key before anything starts
    if config.verifier is not None:
        client_settings(config.verifier)
    calls = version_calls(version, config)
    keys = keys_for(calls, config, template)
    retry = (config.retry_max_tokens or 0) > config.max_tokens
    before = stored_calls(keys, retry_truncated=retry)
    cached_at = {i for i, k in enumerate(keys) if k in before}
    estimate = estimate_run(
        calls,
        template=template,
        max_tokens=config.max_tokens,
        image_max_side=config.image_max_side,
        cached=cached_at,
    )
    if on_estimate is not None:
        on_estimate(estimate)
    progress(len(cached_at), len(calls), f"Estimate: {estimate.text()}")
    seen: set[str] = set()
    tasks = []
    for key, call in zip(keys, calls, strict=True):
        if key not in before and key not in seen:
            seen.add(key)
            tasks.append(Task(key, call))
    outcome = make_calls(
        tasks,
        config=config,
        template=template,
        total=len(calls),
        cached=len(cached_at),
        progress=progress,
        transport=transport,
    )
    return _score(
        version=version,
        config=config,
        judge=judge,
        template=template,
        calls=calls,
        keys=keys,
        cached_keys=set(before),
        estimate=estimate,
        outcome=outcome,
        by=by,
        job=job,
    )


def _truncated_row(record: JudgeCall, qid: str, run: int) -> dict[str, Any]:
    return {
        "run": run,
        "question_id": qid,
        "order": record.order,
        "completion_tokens": record.completion_tokens,
        "reasoning_tokens": record.reasoning_tokens,
    }


def run_warnings(config: JudgeConfig, outcome: CallsOutcome) -> list[str]:
    """What a reader of the run's figures should know: a stop, identical runs, adaptations."""
    warnings = [outcome.stop_reason] if outcome.stop_reason else []
    sampling_fixed = any(a["param"] == "temperature" for a in outcome.adaptations)
    if generation(config).identical_runs() and not sampling_fixed:
        warnings.append(
            f"{config.runs} runs at temperature 0: the runs will be (nearly) identical, so "
            "their majority vote adds little; sample (temperature above 0) to scale at test time."
        )
    for adaptation in outcome.adaptations:
        change = f"sent as {adaptation['replacement']}" if adaptation["replacement"] else "left out"
        warnings.append(
            f"The server refused {adaptation['param']}; it was {change} "
            f"(the server said: {adaptation['reason']})."
        )
    return warnings


def call_label(call: JudgeCall | None) -> str | None:
    """A stored call as a row label: None (failed or never made), invalid (unparsed), or the
    verdict."""
    if call is None or call.parse_method == FAILED:
        return None
    if call.parse_method in (UNPARSED, TRUNCATED) or not call.verdict:
        return INVALID_LABEL
    return call.verdict


def _score(
    *,
    version: DatasetVersion,
    config: JudgeConfig,
    judge: str,
    template: PromptTemplate,
    calls: list[RowCall],
    keys: list[str],
    cached_keys: set[str],
    estimate: Estimate,
    outcome: CallsOutcome,
    by: Any,
    job: Job | None,
) -> RunResult:
    both = config.orders == JudgeConfig.Orders.BOTH
    stored = calls_by_key(keys)
    # Per run and row: the call of each order.
    cells: dict[tuple[int, str], dict[str, JudgeCall | None]] = {}
    records_by_split: dict[str, list[CallRecord]] = {}
    failures: list[dict[str, Any]] = []
    n_failed = 0
    for call, key in zip(calls, keys, strict=True):
        record = stored.get(key)
        cells.setdefault((call.run_index, call.question_id), {})[call.order] = record
        if record is None:
            continue
        if record.parse_method == FAILED:
            n_failed += 1
            if len(failures) < _FAILURES_LISTED:
                failures.append(
                    {
                        "question_id": call.question_id,
                        "run": call.run_index,
                        "order": call.order,
                        "error": record.error,
                    }
                )
        records_by_split.setdefault(call.split, []).append(
            CallRecord(
                question_id=call.question_id,
                split=call.split,
                criterion=call.criterion,
                run_index=call.run_index,
                order=call.order,
                verdict=record.verdict or None,
                parse_method=record.parse_method,
                prompt_tokens=record.prompt_tokens,
                completion_tokens=record.completion_tokens,
                latency_ms=record.latency_ms,
                cached=key in cached_keys,
                reasoning_tokens=record.reasoning_tokens,
            )
        )
    price_in = _price(config.price_input_per_million)
    price_out = _price(config.price_output_per_million)
    runner_figures = {
        split: split_figures(records, both=both, price_in=price_in, price_out=price_out)
        for split, records in records_by_split.items()
    }
    questions = list(dict.fromkeys(c.question_id for c in calls))
    split_of = {c.question_id: c.split for c in calls}
    per_run: dict[int, list[tuple[str, str, str, list[str]]]] = {}
    unparsable: dict[int, list[dict[str, Any]]] = {}
    truncated: dict[int, list[dict[str, Any]]] = {}
    for run in range(1, config.runs + 1):
        rows = []
        for qid in questions:
            orders = cells.get((run, qid), {})
            ab, ba = orders.get("ab"), orders.get("ba")
            label = combine_orders(call_label(ab), call_label(ba), both=both)
            if label is None:
                continue
            raw = ab.raw_output if ab else ""
            if both and ba is not None:
                raw = f"{raw}\n\n[swapped order: Response 1 was B]\n{ba.raw_output}"
            keys_of = [r.key for r in (ab, ba) if r is not None]
            rows.append((qid, label, raw, keys_of))
            for record in (ab, ba):
                if record is not None and record.parse_method == UNPARSED:
                    unparsable.setdefault(run, []).append(
                        {
                            "line": None,
                            "run": run,
                            "question_id": qid,
                            "text": record.raw_output.strip()[-200:],
                        }
                    )
                elif record is not None and record.parse_method == TRUNCATED:
                    row = _truncated_row(record, qid, run)
                    truncated.setdefault(run, []).append({**row, "split": split_of[qid]})
        per_run[run] = rows
    if not any(per_run.values()):
        first = failures[0]["error"] if failures else "no call was made"
        raise RunnerError(f"no row got a verdict, so nothing was scored (first error: {first})")
    partial = bool(outcome.stop_reason) or any(
        len(rows) < len(questions) for rows in per_run.values()
    )
    tokens_all = sum(f["tokens"]["total"] for f in runner_figures.values())
    prompt_all = sum(f["tokens"]["prompt"] for f in runner_figures.values())
    completion_all = sum(f["tokens"]["completion"] for f in runner_figures.values())
    config_shown = {
        "name": config.name,
        "base_url": normalise_base_url(config.base_url),
        "model": config.model,
        "runs": config.runs,
        "orders": config.orders,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_tokens": config.max_tokens,
        "seed": config.seed,
        "api_style": config.api_style,
        "replicas": len(config.urls),
        "reasoning_effort": config.reasoning_effort,
        "retry_max_tokens": config.retry_max_tokens,
        "template": template.name,
        "verifier": config.verifier.name if config.verifier else None,
        "currency": config.currency,
    }
    with transaction.atomic():
        DatasetVersion.objects.select_for_update().filter(pk=version.pk).first()
        # A new runner run of a judge replaces its earlier runner runs (uploads stay).
        JudgeRun.objects.filter(
            version=version, judge=judge, source=JudgeRun.Source.RUNNER
        ).delete()
        used = JudgeRun.objects.filter(version=version, judge=judge).aggregate(m=Max("run_index"))
        start = (used["m"] or 0) + 1
        runs = []
        for run, rows in per_run.items():
            listed = unparsable.get(run, [])
            cut = truncated.get(run, [])
            stats = {
                "rows_in_scope": len(questions),
                "accepted": len(rows),
                "missing": len(questions) - len(rows),
                "invalid": sum(1 for _, label, _, _ in rows if label == INVALID_LABEL),
                "unparsable": len(listed),
                "unparsable_rows": listed[:_UNPARSABLE_LISTED],
                "truncated": len(cut),
                "truncated_rows": cut[:_UNPARSABLE_LISTED],
                "adaptations": outcome.adaptations,
                "warnings": run_warnings(config, outcome),
                "runner_run": run,
                "partial": partial,
                "stop_reason": outcome.stop_reason,
                "runner": runner_figures,
                "config": config_shown,
                "failures": failures,
            }
            judge_run = JudgeRun.objects.create(
                version=version,
                judge=judge,
                run_index=start + run - 1,
                template_hash=template.sha256,
                source=JudgeRun.Source.RUNNER,
                stats=stats,
                job=job,
                created_by=by if getattr(by, "is_authenticated", False) else None,
            )
            Prediction.objects.bulk_create(
                (
                    Prediction(
                        run=judge_run, question_id=q, prediction=p, raw_output=r, call_keys=k
                    )
                    for q, p, r, k in rows
                ),
                batch_size=2000,
            )
            runs.append(judge_run)
        scorecards = scorecard_compute(version=version, judge=judge)
    return RunResult(
        judge=judge,
        runs=runs,
        scorecards=scorecards,
        estimate=estimate,
        calls=len(calls),
        made=outcome.tally.made,
        cached=outcome.cached,
        failed=n_failed,
        truncated=sum(len(rows) for rows in truncated.values()),
        truncated_rows=[row for rows in truncated.values() for row in rows][:_FAILURES_LISTED],
        warnings=run_warnings(config, outcome),
        tokens=tokens_all,
        cost=cost_of(prompt_all, completion_all, price_in, price_out),
        partial=partial,
        stop_reason=outcome.stop_reason,
        failures=failures,
        currency=config.currency,
    )
