"""Storing a judge's predictions on a dataset version and computing its scorecards.

An upload is all or nothing: the file is read and checked against the version's rows first
(``judging.predictions.read_predictions``: a bad line raises an error naming the line and the
field), then its runs and every prediction are written, and the judge's scorecards recomputed, in
one transaction. The version row is locked for that transaction, so two uploads of one version
never pick the same run index.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from aggregation.models import DatasetVersion
from annotation.importing.uploads import upload_store
from core.db import insert_rows
from core.jobs import job_create, job_enqueue
from core.models import Job
from core.text import counted, plural_form

from ..compare import covering_runs
from ..datasets import contested_from_version, rows_from_version
from ..errors import InputFileError, PredictionsFileRejected
from ..metrics import (
    MODEL_A,
    MODEL_B,
    TIE_LABEL,
    ScoreInput,
    decode_predictions,
    encode_predictions,
    majority_vote_codes,
    score_many,
    tie_margin_grid,
    tie_margin_sweep,
)
from ..models import JudgeRun, Prediction, Scorecard
from ..parsing import tie_margin_problem
from ..predictions import DatasetIndex, ParsedPredictions, read_predictions
from ..selectors.compare import run_codes
from .judge_reliability import judge_statistics
from .ppi_figures import scorecard_ppi

Progress = Callable[..., None]

#: How the runs of one judge combine (mirrors judging.metrics.majority_vote).
VOTE_RULE = (
    "Per row, invalid and missing runs abstain; more than half abstaining, or a tie between "
    "model_a and model_b votes, gives invalid."
)
_BATCH = 5000
# A run's stats list at most this many unparsable outputs (the count is always complete).
_UNPARSABLE_LISTED = 1000
_JUDGE_MAX = JudgeRun._meta.get_field("judge").max_length
_HASH_MAX = JudgeRun._meta.get_field("template_hash").max_length
_RUN_MAX = 32767


class UploadRejected(ValueError):
    """An upload refused before anything was stored.

    ``field`` names the form or API field at fault (``file`` for a bad line of the file, then
    ``line`` and ``file_field`` say where in the file).
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        line: int | None = None,
        file_field: str | None = None,
        detail: str | None = None,
    ):
        self.message = message
        self.field = field
        self.line = line
        self.file_field = file_field
        self.detail = detail or message
        #: Every error, as the page and the API list them; ``more`` counts those past the list.
        self.errors = [self.as_dict()]
        self.more = 0
        super().__init__(message)

    @classmethod
    def from_file_error(cls, exc: InputFileError) -> UploadRejected:
        """The file's errors: all of them when the reader listed several (every bad line)."""
        rejected = cls(
            str(exc), field="file", line=exc.line, file_field=exc.field, detail=exc.message
        )
        if isinstance(exc, PredictionsFileRejected):
            rejected.errors = [
                {"line": p.line, "field": p.field or "file", "message": p.message}
                for p in exc.problems
            ]
            rejected.more = exc.more
        return rejected

    def as_dict(self) -> dict[str, Any]:
        """The (first) error as the page and the API list it: line, field, message."""
        return {"line": self.line, "field": self.file_field or self.field, "message": self.detail}


@dataclass
class UploadResult:
    """What one upload stored: its runs (a file with a ``run`` column holds several)."""

    runs: list[JudgeRun]
    scorecards: list[Scorecard]
    warnings: list[str] = field(default_factory=list)

    @property
    def run(self) -> JudgeRun:
        return self.runs[0]

    def summary(self) -> str:
        """What was stored, counted: "Stored run 2 of gpt-4o: 102 predictions." and so on."""
        indexes = ", ".join(str(r.run_index) for r in self.runs)
        # A run's stored predictions; "accepted" counts the lines of the whole file.
        stored = sum(r.stats.get("predictions", r.stats.get("accepted", 0)) for r in self.runs)
        unparsable = sum(r.stats.get("unparsable", 0) for r in self.runs)
        runs = plural_form(len(self.runs), "run")
        text = f"Stored {runs} {indexes} of {self.runs[0].judge}: {counted(stored, 'prediction')}"
        if unparsable:
            text += f", {unparsable:,} unparsable (counted as invalid)"
        missing = sum(r.stats.get("missing", 0) for r in self.runs)
        if missing:
            rows = counted(missing, "dataset row")
            text += (
                f"; {rows} without a prediction {'counts' if missing == 1 else 'count'} as wrong"
            )
        return text + "."


def _clean_judge(judge: str | None) -> str:
    judge = (judge or "").strip()
    if len(judge) > _JUDGE_MAX:
        raise UploadRejected(f"at most {_JUDGE_MAX} characters", field="judge")
    return judge


def _check_tie_margin(tie_margin: float) -> None:
    problem = tie_margin_problem(tie_margin)
    if problem:
        raise UploadRejected(problem, field="tie_margin")


def _check_version(version: DatasetVersion) -> None:
    if version.status != DatasetVersion.Status.READY:
        raise UploadRejected(
            f"version {version.number} is {version.get_status_display().lower()}; "
            "predictions need a ready version",
            field="version",
        )


def run_index_check(*, version: DatasetVersion, judge: str, run_index: int | None) -> None:
    """Refuse a run index the judge already uses on the version (a cheap check before a job)."""
    if run_index is None or not judge:
        return
    if not 1 <= run_index <= _RUN_MAX:
        raise UploadRejected(f"must be between 1 and {_RUN_MAX}", field="run_index")
    if JudgeRun.objects.filter(version=version, judge=judge, run_index=run_index).exists():
        raise UploadRejected(
            f"{judge} already has run {run_index} on version {version.number}; "
            "leave the run index empty for the next one",
            field="run_index",
        )


def _indexes_for(
    *, version: DatasetVersion, judge: str, file_runs: list[int], run_index: int | None
) -> list[int]:
    """Run indexes for the file's runs: the one given, or the judge's next free ones."""
    if run_index is not None:
        if len(file_runs) > 1:
            listed = ", ".join(str(r) for r in file_runs)
            raise UploadRejected(
                f"the file holds runs {listed}; leave the run index empty to store them all",
                field="run_index",
            )
        run_index_check(version=version, judge=judge, run_index=run_index)
        return [run_index]
    used = JudgeRun.objects.filter(version=version, judge=judge).aggregate(m=Max("run_index"))
    start = (used["m"] or 0) + 1
    if start + len(file_runs) - 1 > _RUN_MAX:
        raise UploadRejected("the judge has too many runs on this version", field="run_index")
    return list(range(start, start + len(file_runs)))


#: The verifier fallback: (parsed predictions, the rows' question ids) -> the rows it asked about.
Verify = Callable[[ParsedPredictions, list[str]], list[dict[str, Any]]]


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


def judge_run_upload(
    *,
    version: DatasetVersion,
    judge: str | None,
    file: str | Path | IO,
    run_index: int | None = None,
    by: Any,
    lenient: bool = False,
    split: str | None = None,
    template_hash: str = "",
    source: str = JudgeRun.Source.UPLOAD,
    job: Job | None = None,
    progress: Progress | None = None,
    tie_margin: float = 0.0,
    verify: Verify | None = None,
) -> UploadResult:
    """Store a predictions file as runs of ``judge`` and recompute the judge's scorecards.

    ``verify`` is the verifier fallback (``judging.runner.fallback``): it reads the outputs the
    parser cannot and returns the rows it asked about; the decided ones are marked in the stats.

    ``judge`` may be empty when the file names it (a ``judge`` column). ``split`` limits the
    upload to one split (lines of the other split are errors, or skipped when ``lenient``).
    ``tie_margin`` is the δ of a scalar judge's file (scores instead of verdicts): scores
    within δ of each other give a tie, which counts as wrong.
    Raises UploadRejected (with the line and field of a bad line); then nothing is stored.
    """
    progress = progress or _noop
    _check_version(version)
    _check_tie_margin(tie_margin)
    judge = _clean_judge(judge)
    template_hash = (template_hash or "").strip()
    if len(template_hash) > _HASH_MAX:
        raise UploadRejected(f"at most {_HASH_MAX} characters", field="template_hash")
    run_index_check(version=version, judge=judge, run_index=run_index)

    try:
        rows = rows_from_version(version)
    except InputFileError as exc:
        raise UploadRejected(exc.message, field="version") from None
    # Progress counts the file's lines read (of its lines), then the write and the scoring in
    # one step. Reading is the long part and reports as it goes; the write is one transaction,
    # so a progress update made inside it would only show once it commits.
    contested = contested_from_version(version)
    progress(0, None, "Reading the predictions file")
    try:
        index = DatasetIndex(rows, contested)
        parsed = read_predictions(
            file,
            dataset_index=index,
            lenient=lenient,
            split=split,
            progress=lambda done, total=None: progress(done, total, "Reading the predictions file"),
            tie_margin=tie_margin,
        )
    except InputFileError as exc:
        raise UploadRejected.from_file_error(exc) from None
    verified = verify(parsed, index.question_id) if verify is not None else []
    if parsed.judge and judge and parsed.judge != judge:
        raise UploadRejected(
            f"the file's judge column says {parsed.judge!r}, not {judge!r}", field="judge"
        )
    judge = judge or parsed.judge or ""
    if not judge:
        raise UploadRejected("name the judge (the file has no judge column)", field="judge")
    judge = _clean_judge(judge)

    file_runs = parsed.run_indices
    n_predictions = sum(int(np.not_equal(parsed.runs[r], None).sum()) for r in file_runs)
    n_lines = parsed.counts["lines"]
    progress(n_lines, n_lines, f"Storing {counted(n_predictions, 'prediction')} and scoring")
    qids = rows.question_id.tolist()
    contested_qids = [q for q, _, _, _ in contested]
    with transaction.atomic():
        DatasetVersion.objects.select_for_update().filter(pk=version.pk).first()
        indexes = _indexes_for(
            version=version, judge=judge, file_runs=file_runs, run_index=run_index
        )
        runs = []
        for file_run, index in zip(file_runs, indexes, strict=True):
            stats = parsed.stats(file_run)
            stats["unparsable_rows"] = stats["unparsable_rows"][:_UNPARSABLE_LISTED]
            stats.update({"file_run": file_run, "split": split, "lenient": lenient})
            if verify is not None:
                stats.update(_verified_stats(verified, file_run))
            stats["predictions"] = int(np.not_equal(parsed.runs[file_run], None).sum())
            on_contested = parsed.contested.get(file_run)
            if on_contested is not None:
                stats["contested_predictions"] = int(np.not_equal(on_contested, None).sum())
            run = JudgeRun.objects.create(
                version=version,
                judge=judge,
                run_index=index,
                template_hash=template_hash,
                source=source,
                stats=stats,
                job=job,
                created_by=by if getattr(by, "is_authenticated", False) else None,
            )
            runs.append(run)
            labels = parsed.runs[file_run]
            raw = parsed.raw_outputs.get(file_run, {})
            scores = parsed.scores.get(file_run)
            _predictions_insert(
                run,
                (
                    (
                        qids[pos],
                        labels[pos],
                        raw.get(pos, ""),
                        *((None, None) if scores is None else scores[pos].tolist()),
                    )
                    for pos in np.flatnonzero(np.not_equal(labels, None)).tolist()
                ),
            )
            if on_contested is not None:
                _contested_insert(run, parsed, file_run, contested_qids)
        scorecards = scorecard_compute(version=version, judge=judge, rows=rows)
    return UploadResult(runs=runs, scorecards=scorecards, warnings=list(parsed.warnings))


def _verified_stats(verified: list[dict[str, Any]], run: int) -> dict[str, Any]:
    """The verifier's part of a run's stats: the rows it was asked about and those it decided."""
    mine = [v for v in verified if v["run"] == run]
    decided = [v for v in mine if v["verdict"]]
    return {
        "verifier_asked": len(mine),
        "verified": len(decided),
        "verified_rows": decided[:_UNPARSABLE_LISTED],
    }


def _predictions_insert(run: JudgeRun, rows: Iterable[tuple]) -> None:
    """Insert (question_id, prediction, raw_output[, score_a, score_b]) rows of a run."""
    insert_rows(
        Prediction,
        ("run_id", "question_id", "prediction", "raw_output", "score_a", "score_b"),
        ((run.pk, *row, *((None, None) if len(row) == 3 else ())) for row in rows),
    )


def _contested_insert(
    run: JudgeRun, parsed: ParsedPredictions, file_run: int, qids: list[str]
) -> None:
    """Store a run's verdicts on the contested rows (kept apart from the scored rows)."""
    labels = parsed.contested[file_run]
    scores = parsed.contested_scores.get(file_run)
    _predictions_insert(
        run,
        (
            (
                qids[i],
                labels[i],
                "",
                *((None, None) if scores is None else scores[i].tolist()),
            )
            for i in np.flatnonzero(np.not_equal(labels, None)).tolist()
        ),
    )


def contested_distribution(
    *, runs: list[JudgeRun], contested: list[tuple[str, str, str, str]], split: str
) -> dict[str, Any] | None:
    """How the judge's verdicts fall on the split's contested rows: A / B / tie / invalid.

    Several runs combine by the scorecard's majority vote (a tie then abstains, as an invalid
    verdict does). Shares are of the contested rows the judge answered; missing are counted.
    None when the version has no contested rows on the split.
    """
    qids = [q for q, _, s, _ in contested if s == split]
    if not qids:
        return None
    position = {q: i for i, q in enumerate(qids)}
    per_run = []
    for run in runs:
        labels = np.full(len(qids), None, dtype=object)
        for q, label in Prediction.objects.filter(run=run, question_id__in=qids).values_list(
            "question_id", "prediction"
        ):
            labels[position[q]] = label
        per_run.append(labels)
    if len(per_run) == 1:
        combined = per_run[0]
    else:
        combined = decode_predictions(
            majority_vote_codes(np.stack([encode_predictions(r) for r in per_run]))
        )
    counts = {
        "model_a": int((combined == MODEL_A).sum()),
        "model_b": int((combined == MODEL_B).sum()),
        "tie": int((combined == TIE_LABEL).sum()),
        "missing": int(np.equal(combined, None).sum()),
    }
    answered = len(qids) - counts["missing"]
    counts["invalid"] = answered - counts["model_a"] - counts["model_b"] - counts["tie"]
    shares = {
        k: (round(100 * counts[k] / answered, 2) if answered else None)
        for k in ("model_a", "model_b", "tie", "invalid")
    }
    return {"rows": len(qids), "answered": answered, "counts": counts, "shares": shares}


def _tie_margin_figures(
    runs: list[JudgeRun], rows: ScoreInput, split: str
) -> dict[str, Any] | None:
    """The latest scalar run's chosen margin, ties and the sweep over margins on ``split``."""
    run = next((r for r in reversed(runs) if r.stats.get("scored")), None)
    if run is None:
        return None
    order = np.argsort(rows.question_id, kind="stable")
    sorted_qids = rows.question_id[order]
    score_a = np.full(len(rows), np.nan)
    score_b = np.full(len(rows), np.nan)
    stored = list(
        Prediction.objects.filter(run=run, score_a__isnull=False).values_list(
            "question_id", "score_a", "score_b"
        )
    )
    if stored and len(sorted_qids):
        qids = np.array([q for q, _, _ in stored], dtype=str)
        at = np.minimum(np.searchsorted(sorted_qids, qids), len(sorted_qids) - 1)
        known = sorted_qids[at] == qids
        score_a[order[at[known]]] = np.array([a for _, a, _ in stored], dtype=float)[known]
        score_b[order[at[known]]] = np.array([b for _, _, b in stored], dtype=float)[known]
    margin = float(run.stats.get("tie_margin") or 0.0)
    margins = sorted(
        {margin, *tie_margin_grid(score_a[rows.split == split], score_b[rows.split == split])}
    )
    sweep = tie_margin_sweep(rows, score_a, score_b, split=split, margins=margins)
    chosen = next(p for p in sweep if p["margin"] == margin)
    return {
        "run_index": run.run_index,
        "tie_margin": margin,
        "ties": chosen["ties"],
        "scored": chosen["scored"],
        "sweep": sweep,
    }


def _runner_figures(runs: list[JudgeRun], split: str) -> dict[str, Any]:
    """The judge runner's figures of the latest runner run on ``split`` (empty without one)."""
    stats = next(
        (
            r.stats
            for r in reversed(runs)
            if r.source == JudgeRun.Source.RUNNER and "runner" in r.stats
        ),
        None,
    )
    if stats is None or split not in stats["runner"]:
        return {}
    return {
        **stats["runner"][split],
        "partial": bool(stats.get("partial")),
        "stop_reason": stats.get("stop_reason", ""),
        "config": stats.get("config", {}),
        "failures": stats.get("failures", []),
        "warnings": stats.get("warnings", []),
        "adaptations": stats.get("adaptations", []),
        "truncated_rows": [
            row
            for r in runs
            if r.source == JudgeRun.Source.RUNNER
            for row in r.stats.get("truncated_rows", [])
            if row.get("split", split) == split
        ],
    }


def scaling_curve(rows: ScoreInput, arrays: list[np.ndarray], split: str) -> list[dict[str, Any]]:
    """Test-time scaling: PAcc, TOS, CMR and Avg of the majority vote over the first 1, 3, 5 …
    runs (and all of them), in run order; point estimates (no bootstrap)."""
    counts = sorted({*range(1, len(arrays) + 1, 2), len(arrays)})
    voted = [arrays[0] if m == 1 else majority_vote_codes(np.stack(arrays[:m])) for m in counts]
    results = score_many(rows, voted, split=split, n_boot=0)
    return [
        {"runs": m, **_headline(fig), "overall": (fig.get("overall") or {}).get("value")}
        for m, fig in zip(counts, results, strict=True)
    ]


def _headline(figures: dict[str, Any]) -> dict[str, float | None]:
    return {k: (figures.get(k) or {}).get("value") for k in ("pacc", "cmr", "tos", "avg")}


@transaction.atomic
def scorecard_compute(
    *, version: DatasetVersion, judge: str, rows: ScoreInput | None = None
) -> list[Scorecard]:
    """Score every split the judge's runs cover, all runs majority-voted, and store the cards.

    A run covers a split when it has at least one prediction there. A split no run covers loses
    its scorecard. ``rows`` may pass the version's rows already loaded.
    """
    rows = rows if rows is not None else rows_from_version(version)
    contested = contested_from_version(version)
    runs = list(JudgeRun.objects.filter(version=version, judge=judge).order_by("run_index"))
    codes = run_codes(runs, rows)
    now = timezone.now()
    cards = []
    kept_splits = []
    for split in rows.splits:
        mask = rows.split == split
        covered = [(runs[i], codes[i]) for i in covering_runs(codes, mask)]
        if not covered:
            continue
        kept_splits.append(split)
        # Every run and the vote share one set of bootstrap replicates (one pass for all).
        arrays = [code for _, code in covered]
        if len(arrays) > 1:
            arrays.append(majority_vote_codes(np.stack(arrays)))
        results = score_many(rows, arrays, split=split)
        figures, per_run = results[-1], results[: len(covered)]
        hashes = sorted({run.template_hash for run, _ in covered if run.template_hash})
        figures["vote"] = {"n_runs": len(covered), "rule": VOTE_RULE}
        if len(covered) > 2:
            figures["scaling"] = scaling_curve(rows, [code for _, code in covered], split)
        figures["runs"] = [
            {
                "run_id": run.pk,
                "run_index": run.run_index,
                "created_at": run.created_at.isoformat(),
                "template_hash": run.template_hash,
                "source": run.source,
                "overall": (fig.get("overall") or {}).get("value"),
                **_headline(fig),
                "invalid": fig["counts"]["invalid"],
                "missing": fig["counts"]["missing"],
            }
            for (run, _), fig in zip(covered, per_run, strict=True)
        ]
        figures["template_hashes"] = hashes
        runner = _runner_figures([run for run, _ in covered], split)
        if runner:
            figures["runner"] = runner
        scalar = _tie_margin_figures([run for run, _ in covered], rows, split)
        if scalar:
            figures["tie_margin"] = scalar
        on_contested = contested_distribution(
            runs=[run for run, _ in covered], contested=contested, split=split
        )
        if on_contested:
            figures["contested"] = on_contested
        figures.update(judge_statistics(version=version, rows=rows, split=split, covered=covered))
        figures.update(scorecard_ppi(version=version, rows=rows, split=split, codes=arrays[-1]))
        figures["computed_at"] = now.isoformat()
        latest_hash = next(
            (run.template_hash for run, _ in reversed(covered) if run.template_hash), ""
        )
        card, _ = Scorecard.objects.update_or_create(
            version=version,
            judge=judge,
            split=split,
            defaults={
                "runs": len(covered),
                "template_hash": latest_hash,
                "figures": figures,
                **_headline(figures),
            },
        )
        cards.append(card)
    Scorecard.objects.filter(version=version, judge=judge).exclude(split__in=kept_splits).delete()
    return cards


@transaction.atomic
def judge_run_delete(*, run: JudgeRun, by: Any) -> list[Scorecard]:
    """Delete one run and its predictions and rescore the judge on the remaining runs."""
    DatasetVersion.objects.select_for_update().filter(pk=run.version_id).first()
    version, judge = run.version, run.judge
    run.delete()
    return scorecard_compute(version=version, judge=judge)


def _upload_path(version: DatasetVersion, name: str) -> str:
    safe = Path(name).name.replace(" ", "_")[-80:] or "predictions.jsonl"
    return f"judging/uploads/v{version.pk}/{uuid.uuid4().hex}-{safe}"


def predictions_upload_enqueue(
    *,
    version: DatasetVersion,
    judge: str,
    file: IO,
    by: Any,
    run_index: int | None = None,
    template_hash: str = "",
    lenient: bool = False,
    split: str | None = None,
    tie_margin: float = 0.0,
    verifier_id: int | None = None,
) -> Job:
    """Keep the uploaded file and queue the job that stores and scores it."""
    from ..tasks import predictions_score

    _check_version(version)
    _check_tie_margin(tie_margin)
    judge = _clean_judge(judge)
    run_index_check(version=version, judge=judge, run_index=run_index)
    path = upload_store(_upload_path(version, getattr(file, "name", "")), file)
    with transaction.atomic():
        job = job_create(
            kind=Job.Kind.SCORE_JUDGE,
            project=version.project,
            created_by=by,
            params={
                "version_id": version.pk,
                "judge": judge,
                "run_index": run_index,
                "template_hash": template_hash,
                "lenient": lenient,
                "split": split,
                "tie_margin": tie_margin,
                "verifier_id": verifier_id,
                "path": path,
                "filename": Path(getattr(file, "name", "") or path).name,
            },
            message=f"Queued: predictions of {judge or 'a judge'} on v{version.number}",
        )
        job_enqueue(job, predictions_score)
    return job
