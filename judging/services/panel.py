"""The judge panel: every judge asks about every (sample, criterion) of a project's formal samples
in both orders, and one ``PanelLabel`` per (sample, criterion) records what the panel said.

The calls go through the judge runner (``judging.runner``: the criterion prompt, client, cache,
verifier), so a killed worker's next attempt, or the same command again, asks only the calls not
yet answered, and a criterion already judged on a dataset version with the same text is not
asked again. Each judge is asked in both orders whatever its config says; with several runs, the
runs of each order are combined by majority vote. The panel's rule (unanimous, consistent,
routable, its side) is ``aggregation.assisted.panel_verdict``. A run replaces the project's
panel labels at once, in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.core.files.storage import default_storage
from django.db import transaction

from aggregation.assisted import NO_ANSWER, panel_verdict
from aggregation.assisted import A as CODE_A
from aggregation.assisted import B as CODE_B
from aggregation.rules import PREFERENCES
from annotation.models import (
    Criterion,
    PanelLabel,
    Project,
    RoutingPolicy,
    Sample,
    SampleStatus,
)
from annotation.selectors.projects import project_has_formal_votes
from core.jobs import job_create, job_enqueue
from core.models import Job
from judging.metrics import MODEL_A, MODEL_B, majority_vote
from judging.models import JudgeCall, JudgeConfig
from judging.runner.engine import FAILED, Task
from judging.runner.requests import ORDERS, RowCall, image_sha256
from judging.runner.run import (
    RunnerError,
    call_label,
    calls_by_key,
    client_settings,
    config_template,
    keys_for,
    make_calls,
    stored_calls,
)

Progress = Callable[..., None]
_CODE = {MODEL_A: CODE_A, MODEL_B: CODE_B}
_SHOWN = {CODE_A: "A", CODE_B: "B"}


@dataclass(frozen=True)
class _Item:
    sample: Sample
    criterion: Criterion


@dataclass
class PanelResult:
    """A finished panel run: what it wrote and what it cost."""

    judges: list[str]
    labels: int
    routable: int
    unanimous: int
    consistent: int
    calls: int
    made: int
    cached: int
    failed: int

    def summary(self) -> str:
        """One sentence for a person."""
        return (
            f"Panel of {', '.join(self.judges)}: {self.labels:,} (sample, criterion) items "
            f"pre-labeled, {self.routable:,} routable ({self.unanimous:,} unanimous, "
            f"{self.consistent:,} position-consistent); {self.calls:,} calls "
            f"({self.made:,} made, {self.cached:,} cache hits, {self.failed:,} failed)."
        )

    def as_dict(self) -> dict[str, Any]:
        """The job's result."""
        return {**self.__dict__, "summary": self.summary()}


def panel_configs(names: Sequence[str]) -> list[JudgeConfig]:
    """The judge configs named, in the order given (raises RunnerError naming missing ones)."""
    names = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not names:
        raise RunnerError("choose at least one judge config for the panel", field="configs")
    found = {
        c.name: c for c in JudgeConfig.objects.select_related("verifier").filter(name__in=names)
    }
    missing = [n for n in names if n not in found]
    if missing:
        raise RunnerError(
            f"no judge config named {', '.join(repr(n) for n in missing)}", field="configs"
        )
    return [found[n] for n in names]


def _items(project: Project) -> list[_Item]:
    criteria: dict[str, list[Criterion]] = {}
    for criterion in Criterion.objects.filter(project=project).order_by("split", "order", "key"):
        criteria.setdefault(criterion.split, []).append(criterion)
    samples = Sample.objects.filter(
        project=project, is_seed=False, status=SampleStatus.ACTIVE
    ).order_by("id")
    return [_Item(s, c) for s in samples for c in criteria.get(s.split, [])]


def _calls(items: list[_Item], config: JudgeConfig) -> list[RowCall]:
    shas: dict[int, str] = {}
    calls = []
    for item in items:
        sample, criterion = item.sample, item.criterion
        if sample.pk not in shas:
            sha = sample.image_sha256
            if sample.image and not sha:
                with default_storage.open(sample.image.name, "rb") as handle:
                    sha = image_sha256(handle.read())
            shas[sample.pk] = sha if sample.image else ""
        for run in range(1, config.runs + 1):
            for order in ORDERS:
                calls.append(
                    RowCall(
                        question_id=f"{sample.external_id}__{criterion.key}",
                        split=sample.split,
                        criterion=criterion.key,
                        criterion_name=criterion.name,
                        criterion_description=criterion.description,
                        question=sample.question,
                        response_a=sample.response_a,
                        response_b=sample.response_b,
                        image_name=sample.image.name if sample.image else "",
                        image_sha256=shas[sample.pk],
                        run_index=run,
                        order=order,
                    )
                )
    return calls


def _answers(
    calls: list[RowCall], keys: list[str], n_items: int, runs: int
) -> tuple[np.ndarray, list[dict[str, str | None]], int]:
    """Per item, this judge's answer per order (codes, and as ``verdicts`` shows it), and how
    many of its calls failed."""
    stored = calls_by_key(keys)
    labels = {order: [[None] * n_items for _ in range(runs)] for order in ORDERS}
    per_item = runs * len(ORDERS)
    failed = 0
    for i, (call, key) in enumerate(zip(calls, keys, strict=True)):
        record: JudgeCall | None = stored.get(key)
        failed += record is not None and record.parse_method == FAILED
        labels[call.order][call.run_index - 1][i // per_item] = call_label(record)
    codes = np.full((n_items, len(ORDERS)), NO_ANSWER, dtype=np.int64)
    shown: list[dict[str, str | None]] = [{} for _ in range(n_items)]
    for o, order in enumerate(ORDERS):
        voted = majority_vote([np.array(run, dtype=object) for run in labels[order]])
        for i, verdict in enumerate(voted):
            code = _CODE.get(verdict, NO_ANSWER)
            codes[i, o] = code
            shown[i][order] = _SHOWN.get(code)
    return codes, shown, failed


def panel_run_execute(
    *,
    project: Project,
    configs: Sequence[JudgeConfig],
    job: Job | None = None,
    progress: Progress | None = None,
    transport: Any = None,
) -> PanelResult:
    """Ask every judge of ``configs`` about every formal (sample, criterion) of ``project`` in
    both orders, and replace the project's panel labels with the panel's verdicts."""
    progress = progress or (lambda *a, **k: None)
    configs = list(configs)
    _refuse_after_routing_started(project)
    if not configs:
        raise RunnerError("choose at least one judge config for the panel", field="configs")
    for config in configs:  # refuse a missing API key before anything starts
        client_settings(config)
        if config.verifier is not None:
            client_settings(config.verifier)
    items = _items(project)
    if not items:
        raise RunnerError(
            "the project has no formal samples with criteria to pre-label", field="project"
        )
    plans = []
    for config in configs:
        config.orders = JudgeConfig.Orders.BOTH  # in memory only: the panel needs both orders
        template = config_template(config)
        calls = _calls(items, config)
        keys = keys_for(calls, config, template)
        plans.append((config, template, calls, keys))
    total = sum(len(calls) for _, _, calls, _ in plans)
    offset = 0
    made = cached = 0
    for config, template, calls, keys in plans:
        before = stored_calls(keys)
        seen: set[str] = set()
        tasks = []
        for key, call in zip(keys, calls, strict=True):
            if key not in before and key not in seen:
                seen.add(key)
                tasks.append(Task(key, call))
        hits = len(calls) - len(tasks)

        def judge_progress(
            done: int, _total: int, line: str = "", *, name: str = config.name, start: int = offset
        ) -> None:
            progress(start + done, total, f"{name}: {line}")

        outcome = make_calls(
            tasks,
            config=config,
            template=template,
            total=len(calls),
            cached=hits,
            progress=judge_progress,
            transport=transport,
        )
        made += outcome.tally.made
        cached += hits
        offset += len(calls)
    columns = []
    shown_by_judge = []
    failed = 0
    for config, _, calls, keys in plans:
        codes, shown, n_failed = _answers(calls, keys, len(items), config.runs)
        columns.append(codes)
        shown_by_judge.append(shown)
        failed += n_failed
    answers = np.stack(columns, axis=1)  # items x judges x orders
    verdict = panel_verdict(answers)
    names = [c.name for c in configs]
    rows = [
        PanelLabel(
            sample=item.sample,
            criterion=item.criterion,
            choice=PREFERENCES[int(verdict.choice[i])],
            unanimous=bool(verdict.unanimous[i]),
            consistent=bool(verdict.consistent[i]),
            routable=bool(verdict.routable[i]),
            verdicts={name: shown_by_judge[j][i] for j, name in enumerate(names)},
            judges=names,
            job_id=job.pk if job is not None else None,
        )
        for i, item in enumerate(items)
    ]
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        _refuse_after_routing_started(project)
        PanelLabel.objects.filter(sample__project=project).delete()
        PanelLabel.objects.bulk_create(rows, batch_size=2000)
    return PanelResult(
        judges=names,
        labels=len(rows),
        routable=int(verdict.routable.sum()),
        unanimous=int(verdict.unanimous.sum()),
        consistent=int(verdict.consistent.sum()),
        calls=total,
        made=made,
        cached=cached,
        failed=failed,
    )


def _refuse_after_routing_started(project: Project) -> None:
    """New panel labels once routed votes exist would change which items were asked of fewer
    humans after the fact (the routing policy is fixed then for the same reason)."""
    if project.routing_policy != RoutingPolicy.OFF and project_has_formal_votes(project=project):
        raise RunnerError(
            "the panel cannot be run again: routing is on and formal votes exist, so its labels "
            "already decided which items one annotator verifies",
            field="configs",
        )


def panel_run_start(*, project: Project, configs: Sequence[JudgeConfig], by: Any) -> Job:
    """Queue a panel run of ``configs`` on ``project`` (raises JobQueueUnavailable,
    RunnerError)."""
    from judging.tasks import panel_run_task

    configs = list(configs)
    _refuse_after_routing_started(project)
    if not configs:
        raise RunnerError("choose at least one judge config for the panel", field="configs")
    names = [c.name for c in configs]
    with transaction.atomic():
        job = job_create(
            kind=Job.Kind.PANEL,
            project=project,
            created_by=by,
            params={"config_ids": [c.pk for c in configs], "judges": names},
            message=f"Queued: panel of {', '.join(names)}",
        )
        job_enqueue(job, panel_run_task)
    return job
