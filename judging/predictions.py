"""Read a judge's predictions file (JSONL or CSV) and align it to the dataset rows.

Each line names a dataset row by ``question_id``, or by ``prompt_id`` + ``criterion``, and gives
either ``prediction`` (``model_a``/``model_b``/``A``/``B``, or a verdict sentence) or the judge's
raw text in ``output`` or ``critic`` (the field of the official judge outputs), parsed by
``parse_judge_output`` with the published rule; ``run`` (default 1) numbers repeated runs of the
judge and ``judge`` may name it. A ``split`` field may use any spelling ``split_key`` accepts.
A prediction that cannot be read is kept as ``invalid`` (it counts as wrong) and listed in
``unparsable``. The per-sample log lmms-eval writes for its ``multi_crit`` tasks
(``--log_samples``) is read too, recognised by its first line (``judging.lmms_eval_log``).

A question id (or prompt and criterion) that names a row in each split of the dataset (a prompt
in two splits) is resolved by the line's ``split``, or by the ``split`` read; a line that gives
neither is an error.

A scalar judge's file gives scores instead of verdicts, in one of two row formats (one per file,
never mixed with verdict lines): ``score_a`` and ``score_b`` on the row's line (a reward model
scoring the pair), or ``response`` (``a`` / ``b``, or ``model_a`` / ``model_b``) and ``score``,
one line per response (a pointwise judge, e.g. 1-5 per response; both responses of a row must
be scored). Scores are finite numbers (JSON numbers, or numeric CSV cells). The verdict is derived
with the tie margin ``tie_margin`` (``judging.parsing.verdicts_from_scores``): a tie counts as
wrong, and the scores are kept (``scores``) for the margin sweep on the scorecard.

Errors name the line and field: malformed lines always, and unknown ids, duplicate rows and
rows of another split unless ``lenient=True``, which skips those lines and reports them in
``warnings`` with counts (a repeated row keeps its first line, as the published evaluation keeps
the first output of a question id). The read goes on past a bad line and then refuses the file
with every error found (:class:`PredictionsFileRejected`), as the sample import does; only a file
that cannot be read at all (not UTF-8, no CSV header) stops it at once. Dataset rows without a
prediction are missing (wrong, counted per run). What the dataset rows hold that scores but
deserves a look (tie labels, prompts in two splits: ``ScoreInput.warnings``) is carried in
``dataset_warnings`` and in the stats' ``warnings``, which uploads store with each run.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, Any

import numpy as np

from annotation.importing.errors import Problem, ProblemList
from annotation.importing.limits import (
    CSV_FIELD_MAX_CHARS,
    JUDGE_OUTPUT_MAX_CHARS,
    PREDICTION_NAME_MAX_CHARS,
    TEXT_ENCODING,
    JsonInputError,
    json_loads,
    shown_value,
    text_problem,
)
from annotation.splits import split_key
from core.text import counted
from judging.errors import PredictionsFileError, PredictionsFileRejected
from judging.lmms_eval_log import SampleLog, looks_like_sample_log
from judging.metrics import INVALID_LABEL, MODEL_A, MODEL_B, TIE_LABEL, ScoreInput
from judging.parsing import parse_judge_output, tie_margin_problem, verdicts_from_scores

ProgressFn = Callable[[int, int | None], None]
#: Fields holding the judge's raw text, in the order they are looked at.
RAW_FIELDS = ("output", "critic")
_EXPLICIT = {"model_a": MODEL_A, "model_b": MODEL_B, "a": MODEL_A, "b": MODEL_B}
# Short fields of a line; anything else (prediction, output, extra columns) may be long.
_NAME_FIELDS = ("question_id", "prompt_id", "criterion", "judge", "split", "run", "response")
#: A scalar judge's fields: both scores on one line, or one response's score per line.
PAIR_SCORE_FIELDS = ("score_a", "score_b")
SCORE_FIELD = "score"
_RESPONSE_SIDE = {"a": 0, "model_a": 0, "1": 0, "b": 1, "model_b": 1, "2": 1}
RUN_MAX = 32767
_EXCERPT = 200
_PROGRESS_EVERY = 10_000
#: How much of a file's first line is read to tell its format (an lmms-eval line is long).
_FIRST_LINE_CHARS = 1_000_000
_BLANK_LINES_PASSED = 100
SAMPLE_LOG = "lmms_eval"


class AmbiguousRow(LookupError):
    """A key that names a row in each split, given without a split."""


def _in_splits(keys: Sequence[Any], splits: list[str]) -> dict[tuple[str, Any], int]:
    """(split, key) -> position, for the keys with rows in more than one split only."""
    first: dict[str, int] = {}
    out: dict[tuple[str, str], int] = {}
    for i, (key, split) in enumerate(zip(keys, splits, strict=True)):
        j = first.setdefault(key, i)
        if splits[j] != split:
            out[splits[j], key] = j
            out.setdefault((split, key), i)
    return out


class DatasetIndex:
    """Row lookups of a dataset: question_id -> position, (prompt_id, criterion) -> position.

    ``contested`` rows (question_id, prompt_id, split, criterion) of the version's contested
    split follow the scored rows (positions ``n_rows`` and up): a prediction for one is read
    and kept apart (``ParsedPredictions.contested``), never scored. A key with a row in each
    split is found with ``find_qid`` / ``find_cell`` and the split.
    """

    def __init__(self, rows: ScoreInput, contested: Sequence[tuple[str, str, str, str]] = ()):
        self.rows = rows
        self.n_rows = len(rows)
        self.by_qid = rows.index()
        self.split = rows.split.tolist()
        self.question_id = rows.question_id.tolist()
        #: (split, question id) -> position, for the ids with a row in each split.
        self.qid_in_split = (
            _in_splits(self.question_id, self.split) if len(self.by_qid) < self.n_rows else {}
        )
        self.contested = list(contested)
        if self.contested:
            self.by_qid = dict(self.by_qid)  # the rows' cached index stays as it is
            for i, (qid, _, split, _) in enumerate(self.contested):
                self.by_qid.setdefault(qid, self.n_rows + i)
                self.split.append(split)
                self.question_id.append(qid)

    @property
    def by_cell(self) -> dict[tuple[str, str], int]:
        """(prompt_id, criterion) -> position, built only for files that address rows that way."""
        return self._cells[0]

    @cached_property
    def _cells(self) -> tuple[dict[tuple[str, str], int], dict[tuple[str, Any], int]]:
        """``by_cell``, and (split, (prompt_id, criterion)) -> position for cells in two splits."""
        keys = list(zip(self.rows.prompt_id.tolist(), self.rows.criterion.tolist(), strict=True))
        cells = {key: i for i, key in enumerate(keys)}
        in_split = _in_splits(keys, self.split[: self.n_rows]) if len(cells) < self.n_rows else {}
        for i, (_, prompt, _, criterion) in enumerate(self.contested):
            cells.setdefault((prompt, criterion), self.n_rows + i)
        return cells, in_split

    def find_qid(self, qid: str, split: str | None) -> int | None:
        """The position of row ``qid``, in ``split`` when the id names a row in each split."""
        return self._find(qid, split, self.by_qid, self.qid_in_split)

    def find_cell(self, prompt: str, criterion: str, split: str | None) -> int | None:
        """The position of the row of ``prompt`` and ``criterion`` (in ``split``, as find_qid)."""
        return self._find((prompt, criterion), split, *self._cells)

    def _find(self, key: Any, split: str | None, table: dict, in_split: dict) -> int | None:
        pos = table.get(key)
        if pos is None or pos >= self.n_rows or (self.split[pos], key) not in in_split:
            return pos
        if split is None:
            raise AmbiguousRow(key)
        return in_split.get((split, key), pos)

    def __len__(self) -> int:
        return self.n_rows + len(self.contested)


@dataclass(frozen=True)
class Unparsable:
    """A line whose prediction could not be read (kept as invalid)."""

    line: int
    run: int
    question_id: str
    text: str


@dataclass
class ParsedPredictions:
    """Predictions aligned to the dataset rows, per run, with every count behind them."""

    judge: str | None
    runs: dict[int, np.ndarray]
    raw_outputs: dict[int, dict[int, str]]
    unparsable: list[Unparsable]
    warnings: list[str]
    counts: dict[str, int]
    missing: dict[int, int] = field(default_factory=dict)
    invalid: dict[int, int] = field(default_factory=dict)
    #: A scalar judge's (rows x 2) score_a / score_b per run (NaN where not scored).
    scores: dict[int, np.ndarray] = field(default_factory=dict)
    tie_margin: float | None = None
    ties: dict[int, int] = field(default_factory=dict)
    #: Labels per run on the contested rows (``DatasetIndex.contested`` order), never scored.
    contested: dict[int, np.ndarray] = field(default_factory=dict)
    contested_scores: dict[int, np.ndarray] = field(default_factory=dict)
    #: What the dataset rows hold that scores but deserves a look (``ScoreInput.warnings``).
    dataset_warnings: list[str] = field(default_factory=list)

    @property
    def run_indices(self) -> list[int]:
        return sorted(self.runs)

    def run_list(self) -> list[np.ndarray]:
        """Label arrays (model_a / model_b / invalid / None = missing) in run order."""
        return [self.runs[r] for r in self.run_indices]

    def stats(self, run: int | None = None) -> dict:
        """JSON counts for one run (or all runs) as stored on JudgeRun.stats."""
        runs = [run] if run is not None else self.run_indices
        listed = [u for u in self.unparsable if u.run in runs]
        scalar = {}
        if self.scores:
            scalar = {
                "scored": True,
                "tie_margin": self.tie_margin,
                "ties": sum(self.ties.get(r, 0) for r in runs),
            }
        return {
            **scalar,
            **self.counts,
            "runs": runs,
            "missing": sum(self.missing[r] for r in runs),
            "invalid": sum(self.invalid[r] for r in runs),
            "unparsable": len(listed),
            "unparsable_rows": [
                {"line": u.line, "run": u.run, "question_id": u.question_id, "text": u.text}
                for u in listed
            ],
            "warnings": [*self.warnings, *self.dataset_warnings],
        }


def _open_text(source: str | Path | IO) -> tuple[IO[str], str]:
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise PredictionsFileError(f"no such file: {path}")
        return path.open(encoding=TEXT_ENCODING, newline=""), path.name
    name = str(getattr(source, "name", "") or "")
    if hasattr(source, "seek"):
        source.seek(0)
    data = source.read()
    if isinstance(data, bytes):
        try:
            data = data.decode(TEXT_ENCODING)
        except UnicodeDecodeError as exc:
            raise PredictionsFileError(f"the file is not UTF-8 text ({exc.reason})") from None
    return io.StringIO(data, newline=""), name


def _line_count(handle: IO[str]) -> int:
    """The lines of the file (for progress: line n of N); the handle is left at its start."""
    if isinstance(handle, io.StringIO):
        text = handle.getvalue()
        return text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    start = handle.tell()
    try:
        count = sum(1 for _ in handle)
    except UnicodeDecodeError:
        count = 0  # the read names the problem
    handle.seek(start)
    return count


def _detect_format(handle: IO[str], name: str) -> str:
    """``csv``, ``jsonl`` or ``SAMPLE_LOG`` (an lmms-eval samples log, told by its first line)."""
    suffix = Path(name).suffix.lower()
    if suffix == ".csv":
        return "csv"
    start = handle.tell()
    try:
        head = handle.readline(_FIRST_LINE_CHARS)
        for _ in range(_BLANK_LINES_PASSED):
            if not head or head.strip():
                break
            head = handle.readline(_FIRST_LINE_CHARS)
    except UnicodeDecodeError as exc:
        raise PredictionsFileError(f"the file is not UTF-8 text ({exc.reason})") from None
    handle.seek(start)
    if looks_like_sample_log(head):
        return SAMPLE_LOG
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    return "jsonl" if head.lstrip().startswith("{") else "csv"


#: A line of the file: its record, or the error that makes it unreadable (the read goes on).
Line = tuple[int, "dict | PredictionsFileError"]


def _jsonl_lines(handle: IO[str]) -> Iterator[Line]:
    for line_no, raw in enumerate(handle, start=1):
        if not raw.strip():
            continue
        try:
            record = json_loads(raw, check_text=False)  # _record_problem names the field
        except JsonInputError as exc:
            yield line_no, PredictionsFileError(f"not valid JSON ({exc})", line=line_no)
            continue
        if not isinstance(record, dict):
            yield line_no, PredictionsFileError("a line must be a JSON object", line=line_no)
            continue
        yield line_no, record


def _record_problem(record: dict, line: int) -> PredictionsFileError | None:
    """The first text of the line that is not storable or over its limit (names short)."""
    for key, value in record.items():
        key_problem = text_problem(str(key), max_chars=PREDICTION_NAME_MAX_CHARS)
        if key_problem:
            return PredictionsFileError(f"a column name {key_problem}", line=line)
        if not isinstance(value, str):
            continue
        limit = PREDICTION_NAME_MAX_CHARS if key in _NAME_FIELDS else JUDGE_OUTPUT_MAX_CHARS
        problem = text_problem(value, max_chars=limit)
        if problem:
            return PredictionsFileError(problem, line=line, field=str(key))
    return None


def _checked(records: Iterator[Line]) -> Iterator[Line]:
    """The records with their texts checked; decoding and CSV errors named, never raised raw."""
    line = 0
    try:
        for line, record in records:
            if isinstance(record, dict):
                record = _record_problem(record, line) or record
            yield line, record
    except UnicodeDecodeError as exc:
        raise PredictionsFileError(
            f"the file is not UTF-8 text ({exc.reason})", line=line + 1 if line else None
        ) from None
    except csv.Error as exc:
        raise PredictionsFileError(f"unreadable CSV ({exc})", line=line + 1) from None


def _csv_lines(handle: IO[str]) -> Iterator[Line]:
    # csv.reader rather than DictReader: DictReader drops blank rows silently, which would
    # shift the line numbers in error messages.
    reader = csv.reader(handle)
    _lift_csv_field_limit()
    header = [h.strip() for h in next(reader, [])]
    if not header:
        raise PredictionsFileError("the CSV file has no header line", line=1)
    has_id = "question_id" in header or {"prompt_id", "criterion"} <= set(header)
    if not has_id:
        raise PredictionsFileError(
            "the header needs question_id, or prompt_id and criterion", line=1, field="question_id"
        )
    scores = set(PAIR_SCORE_FIELDS) <= set(header) or {"response", SCORE_FIELD} <= set(header)
    if "prediction" not in header and not set(RAW_FIELDS) & set(header) and not scores:
        raise PredictionsFileError(
            "the header needs a prediction, output or critic column, or score_a and score_b, "
            "or response and score",
            line=1,
            field="prediction",
        )
    start = reader.line_num + 1
    for cells in reader:
        # Quoted judge outputs span several physical lines; report where the record starts.
        line_no, start = start, reader.line_num + 1
        if not any(c.strip() for c in cells):
            continue
        if len(cells) > len(header):
            yield (
                line_no,
                PredictionsFileError(
                    f"{len(cells)} cells for {len(header)} header columns", line=line_no
                ),
            )
            continue
        yield line_no, dict(zip(header, cells, strict=False))


def _lift_csv_field_limit() -> None:
    # The csv module's own limit (131,072) would stop a long judge output with a bare error;
    # above ours, _record_problem names the line and column.
    if csv.field_size_limit() < CSV_FIELD_MAX_CHARS:
        csv.field_size_limit(CSV_FIELD_MAX_CHARS)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def prediction_label(value: Any, raw: Any) -> str | None:
    """The label of a line: an explicit ``prediction`` value, else its text or the raw output.

    ``model_a``/``model_b``/``A``/``B`` in ``prediction`` are taken as they are (case and
    surrounding spaces ignored); any other text goes through the published parsing rule.
    """
    if isinstance(value, str) and not _blank(value):
        explicit = _EXPLICIT.get(value.strip().lower())
        return explicit if explicit is not None else parse_judge_output(value)
    return parse_judge_output(raw) if isinstance(raw, str) else None


def _run_index(value: Any, line: int) -> int:
    if _blank(value):
        return 1
    try:
        run = int(str(value).strip()) if not isinstance(value, int | float) else int(value)
        if isinstance(value, float) and value != run:
            raise ValueError
    except (ValueError, OverflowError):
        raise PredictionsFileError(
            f"must be a whole number, got {shown_value(value)}", line=line, field="run"
        ) from None
    if run < 0:
        raise PredictionsFileError(f"must be 0 or more, got {run}", line=line, field="run")
    if run > RUN_MAX:
        raise PredictionsFileError(
            f"must be {RUN_MAX} or less, got {shown_value(run)}", line=line, field="run"
        )
    return run


def _score_value(value: Any, line: int, field_name: str) -> float:
    """A score: a finite JSON number or a numeric CSV cell."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not np.isfinite(number):
        raise PredictionsFileError(
            f"must be a finite number, got {shown_value(value)}", line=line, field=field_name
        )
    return number


def _line_scores(record: dict, line: int) -> tuple[tuple[int, float], ...] | None:
    """The (side, score) pairs a line gives, or None for a line of verdicts."""
    given = {f: record.get(f) for f in (*PAIR_SCORE_FIELDS, SCORE_FIELD)}
    present = {f for f, v in given.items() if not _blank(v)}
    if not present:
        return None
    verdict = next((f for f in ("prediction", *RAW_FIELDS) if not _blank(record.get(f))), None)
    if verdict is not None:
        raise PredictionsFileError(
            f"a line gives a verdict ({verdict}) or scores, not both", line=line, field=verdict
        )
    if SCORE_FIELD in present:
        if present & set(PAIR_SCORE_FIELDS):
            raise PredictionsFileError(
                "give score_a and score_b, or response and score, not both",
                line=line,
                field=SCORE_FIELD,
            )
        response = record.get("response")
        side = None if _blank(response) else _RESPONSE_SIDE.get(str(response).strip().lower())
        if side is None:
            raise PredictionsFileError(
                f"must be a or b (model_a or model_b), got {shown_value(response)}",
                line=line,
                field="response",
            )
        return ((side, _score_value(given[SCORE_FIELD], line, SCORE_FIELD)),)
    for f in PAIR_SCORE_FIELDS:
        if f not in present:
            other = "score_a" if f == "score_b" else "score_b"
            raise PredictionsFileError(
                f"a line with {other} needs {f} (or one line per response with response and score)",
                line=line,
                field=f,
            )
    return tuple(
        (side, _score_value(given[f], line, f)) for side, f in enumerate(PAIR_SCORE_FIELDS)
    )


def _problem(exc: PredictionsFileError) -> Problem:
    return Problem(exc.line, exc.field or "", exc.message)


def read_predictions(
    path_or_file: str | Path | IO,
    *,
    dataset_index: DatasetIndex | ScoreInput,
    lenient: bool = False,
    split: str | None = None,
    progress: ProgressFn | None = None,
    tie_margin: float = 0.0,
) -> ParsedPredictions:
    """Read predictions aligned to the dataset rows; ``split`` limits the rows in scope.

    ``tie_margin`` is the δ that turns a scalar judge's scores into verdicts (ignored for a
    file of verdicts).
    """
    margin_problem = tie_margin_problem(tie_margin)
    if margin_problem:
        raise PredictionsFileError(margin_problem, field="tie_margin")
    index = (
        dataset_index if isinstance(dataset_index, DatasetIndex) else DatasetIndex(dataset_index)
    )
    handle, name = _open_text(path_or_file)
    n_rows = len(index)
    runs: dict[int, np.ndarray] = {}
    raw_outputs: dict[int, dict[int, str]] = {}
    first_line: dict[tuple[int, int], int] = {}
    unparsable: list[Unparsable] = []
    skipped: dict[str, list[str]] = {"unknown": [], "duplicate": [], "other_split": []}
    judge: str | None = None
    judge_line = 0
    lines = accepted = 0
    scores: dict[int, np.ndarray] = {}
    score_lines: dict[tuple[int, int, int], int] = {}  # (run, row, side) -> line
    kind_line: dict[str, int] = {}  # "scores" / "verdicts" -> first line of that kind

    problems = ProblemList()

    def reject(kind: str, message: str, *, line: int, field_name: str) -> None:
        if not lenient:
            raise PredictionsFileError(message, line=line, field=field_name)
        skipped[kind].append(f"line {line}: {message}")

    def take(line: int, record: dict) -> None:
        """Align one line to its row; raise PredictionsFileError for a bad line."""
        nonlocal judge, judge_line, accepted
        qid = record.get("question_id")
        own_split = record.get("split")
        hint = split if _blank(own_split) else split_key(own_split)
        if not _blank(qid):
            qid = str(qid).strip()
            pos = find(index.find_qid, qid, hint, line=line)
            id_field = "question_id"
            if pos is None:
                reject("unknown", f"unknown question id {qid!r}", line=line, field_name=id_field)
                return
        else:
            prompt, criterion = record.get("prompt_id"), record.get("criterion")
            if _blank(prompt) or _blank(criterion):
                missing_field = "prompt_id" if _blank(prompt) else "criterion"
                raise PredictionsFileError(
                    "a line needs question_id, or prompt_id and criterion",
                    line=line,
                    field="question_id" if _blank(prompt) and _blank(criterion) else missing_field,
                )
            prompt, criterion = str(prompt).strip(), str(criterion).strip()
            pos = find(index.find_cell, prompt, criterion, hint, line=line)
            if pos is None:
                reject(
                    "unknown",
                    f"no dataset row for prompt {prompt!r} and criterion {criterion!r}",
                    line=line,
                    field_name="prompt_id",
                )
                return
            qid = index.question_id[pos]
        row_split = index.split[pos]
        if not _blank(own_split) and split_key(own_split) != row_split:
            raise PredictionsFileError(
                f"row {qid!r} is in split {row_split!r}, the line says {own_split!r}",
                line=line,
                field="split",
            )
        if split is not None and row_split != split:
            reject(
                "other_split",
                f"row {qid!r} is in split {row_split!r}, not {split!r}",
                line=line,
                field_name="question_id",
            )
            return

        run = _run_index(record.get("run"), line)
        line_judge = record.get("judge")
        if not _blank(line_judge):
            line_judge = str(line_judge).strip()
            if judge is None:
                judge, judge_line = line_judge, line
            elif line_judge != judge:
                raise PredictionsFileError(
                    f"judge {line_judge!r} differs from {judge!r} on line {judge_line}; "
                    "use one file per judge",
                    line=line,
                    field="judge",
                )

        record_scores = _line_scores(record, line)
        if record_scores is not None:
            take_scores(line, run, pos, qid, record_scores)
            return
        note_kind("verdicts", line, "prediction")

        if (run, pos) in first_line:
            reject(
                "duplicate",
                f"second prediction for {qid!r} in run {run} "
                f"(first on line {first_line[run, pos]})",
                line=line,
                field_name="question_id",
            )
            return

        raw_field = next((f for f in RAW_FIELDS if f in record), None)
        if "prediction" not in record and raw_field is None:
            raise PredictionsFileError(
                "a line needs a prediction, an output or a critic field",
                line=line,
                field="prediction",
            )
        value = record.get("prediction")
        output = record.get(raw_field) if raw_field is not None else None
        text = value if not _blank(value) else output
        label = prediction_label(value, output)
        if label is None:
            label = INVALID_LABEL
            shown = "" if text is None else str(text)
            if len(shown) > _EXCERPT:
                shown = "..." + shown[-_EXCERPT:]
            unparsable.append(Unparsable(line=line, run=run, question_id=qid, text=shown))
        if run not in runs:
            runs[run] = np.full(n_rows, None, dtype=object)
            raw_outputs[run] = {}
        runs[run][pos] = label
        if isinstance(output, str) and output:
            raw_outputs[run][pos] = output
        first_line[run, pos] = line
        accepted += 1

    def find(lookup: Callable[..., int | None], *args: Any, line: int) -> int | None:
        try:
            return lookup(*args)
        except AmbiguousRow:
            key = args[:-1]
            what = (
                f"question id {key[0]!r}"
                if len(key) == 1
                else f"prompt {key[0]!r} and criterion {key[1]!r}"
            )
            raise PredictionsFileError(
                f"{what}: a row in each split; give the line a split (or read one split)",
                line=line,
                field="split",
            ) from None

    def note_kind(kind: str, line: int, field_name: str) -> None:
        kind_line.setdefault(kind, line)
        other = "verdicts" if kind == "scores" else "scores"
        if other in kind_line:
            raise PredictionsFileError(
                f"this line gives {kind} but line {kind_line[other]} gives {other}; "
                "a file holds verdicts or scores, not both",
                line=line,
                field=field_name,
            )

    def take_scores(
        line: int, run: int, pos: int, qid: str, found: tuple[tuple[int, float], ...]
    ) -> None:
        nonlocal accepted
        note_kind("scores", line, "score_a" if len(found) == 2 else SCORE_FIELD)
        for side, _ in found:
            if (run, pos, side) in score_lines:
                first = score_lines[run, pos, side]
                which = "ab"[side]
                reject(
                    "duplicate",
                    f"second score of response {which} for {qid!r} in run {run} "
                    f"(first on line {first})",
                    line=line,
                    field_name="score_a" if len(found) == 2 else "response",
                )
                return
        if run not in scores:
            scores[run] = np.full((n_rows, 2), np.nan)
        for side, value in found:
            scores[run][pos, side] = value
            score_lines[run, pos, side] = line
        accepted += 1

    total_lines = _line_count(handle) if progress is not None else None
    sample_log = SampleLog()
    with handle:
        fmt = _detect_format(handle, name)
        lines_read = _csv_lines(handle) if fmt == "csv" else _jsonl_lines(handle)
        records = _checked(sample_log.records(lines_read) if fmt == SAMPLE_LOG else lines_read)
        try:
            for line, record in records:
                lines += 1
                if progress is not None and lines % _PROGRESS_EVERY == 0:
                    progress(line, total_lines)
                try:
                    if isinstance(record, PredictionsFileError):
                        raise record
                    take(line, record)
                except PredictionsFileError as exc:
                    problems.add(_problem(exc))
        except PredictionsFileError as exc:  # the file cannot be read on: list it last
            problems.add(_problem(exc))

    for (run, pos, side), line in score_lines.items():
        if (run, pos, 1 - side) not in score_lines:
            problems.add(
                Problem(
                    line,
                    "response",
                    f"row {index.question_id[pos]!r} has a score for response {'ab'[side]} only "
                    f"in run {run}; give both responses' scores",
                )
            )
    if problems:
        raise PredictionsFileRejected(problems.items, more=problems.more)

    ties: dict[int, int] = {}
    kept = index.n_rows
    for run, pair in scores.items():
        verdicts = verdicts_from_scores(pair[:, 0], pair[:, 1], tie_margin)
        runs[run] = verdicts
        raw_outputs[run] = {}
        ties[run] = int((verdicts[:kept] == TIE_LABEL).sum())
    contested = {r: a[kept:] for r, a in runs.items()}
    contested_scores = {r: a[kept:] for r, a in scores.items()}
    runs = {r: a[:kept] for r, a in runs.items()}
    scores = {r: a[:kept] for r, a in scores.items()}
    n_rows = kept

    if not runs:
        raise PredictionsFileError(f"{name or 'the file'} has no predictions for the dataset")
    if progress is not None:
        progress(lines, lines)  # every line is read: the count of lines with a prediction

    scope = np.ones(n_rows, dtype=bool) if split is None else index.rows.split == split
    missing = {r: int((np.equal(a, None) & scope).sum()) for r, a in runs.items()}
    invalid = {r: int((a == INVALID_LABEL).sum()) for r, a in runs.items()}
    labels = {
        "unknown": "with an unknown id",
        "duplicate": "duplicating an earlier line",
        "other_split": f"of another split than {split!r}",
    }
    warnings = [
        f"{counted(len(items), 'line')} {labels[kind]} skipped (first: {items[0]})"
        for kind, items in skipped.items()
        if items
    ] + sample_log.warnings()
    counts = {
        "lines": lines,
        "accepted": accepted,
        "skipped_unknown": len(skipped["unknown"]),
        "skipped_duplicate": len(skipped["duplicate"]),
        "skipped_other_split": len(skipped["other_split"]),
        "rows_in_scope": int(scope.sum()),
    }
    return ParsedPredictions(
        judge=judge,
        runs=runs,
        raw_outputs=raw_outputs,
        unparsable=unparsable,
        warnings=warnings,
        counts=counts,
        missing=missing,
        invalid=invalid,
        scores=scores,
        tie_margin=float(tie_margin) if scores else None,
        ties=ties,
        contested=contested if index.contested else {},
        contested_scores=contested_scores if index.contested else {},
        dataset_warnings=list(index.rows.warnings),
    )
