"""Read the per-sample log that lmms-eval writes for its ``multi_crit`` tasks (``--log_samples``).

lmms-eval writes one JSONL file per task, ``<date>_samples_<task>.jsonl`` (``multi_crit_open_ended``
and ``multi_crit_reasoning``; the ``multi_crit`` group runs both), one JSON object per dataset row:

- ``doc_id``: the row's position in the task's split of the published dataset;
- ``target``: the row's human preference;
- ``filtered_resps``: the judge's output after the task's filters, one entry per request (the task
  makes one request per row and keeps the raw text): the text the task parsed. ``resps`` (the
  unfiltered outputs, a list per request) is only written where it differs;
- ``doc_hash``, ``prompt_hash``, ``target_hash`` and ``input`` (the prompt);
- one field per metric of the task (``overall``, ``macro_avg``, ``pluralistic_acc``, each
  criterion, ...), all holding the same record of the row: ``question_id``, ``prompt_id``,
  ``criterion``, ``preference``, ``prediction``, ``answer_match``, ``benchmark_type``
  (``open-ended`` / ``reasoning``), ``parse_method`` (``direct``, or ``verifier`` when a verifier
  model read the text), ...;
- ``doc``: the dataset row without its image, where a version of lmms-eval keeps it (the logger
  drops it before writing, so the metric records are where the row's ids are).

Each line becomes a predictions line (``judging.predictions``): the row is named by the record's
``question_id`` (else ``prompt_id`` and ``criterion``), from a metric record or else ``doc``; its
split is the record's ``benchmark_type`` (or ``doc.split``); the raw text is ``filtered_resps[0]``
(else ``resps[0][0]``), taken as the task takes it (``str()`` of it) and parsed here with the
published rule like any raw output. lmms-eval's own ``prediction`` is not taken, so one text scores
the same from every file format; lines its verifier model read are counted in a warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from annotation.importing.limits import JUDGE_OUTPUT_MAX_CHARS, json_loads, text_problem
from core.text import counted
from judging.errors import PredictionsFileError

#: The metric field read first for the row's record (every metric field holds the same record).
FIRST_METRIC = "overall"
VERIFIER = "verifier"

LogLine = tuple[int, "dict | PredictionsFileError"]


class RowRecord(BaseModel):
    """What a line tells of its dataset row: a metric field's record, or ``doc``."""

    model_config = ConfigDict(extra="ignore")

    question_id: str | None = None
    prompt_id: str | None = None
    criterion: str | None = None
    benchmark_type: str | None = None
    split: str | None = None
    parse_method: str | None = None

    @field_validator("question_id", "prompt_id", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        """A numeric id is read as its text, as the task reads it (``str()``)."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    def names_a_row(self) -> bool:
        return self.question_id is not None or (
            self.prompt_id is not None and self.criterion is not None
        )


class SampleLine(BaseModel):
    """One line of a samples log; the metric fields are the extra fields."""

    model_config = ConfigDict(extra="allow")

    doc_id: int
    doc: RowRecord | None = None
    target: str | None = None
    filtered_resps: list[Any] | None = None
    resps: list[Any] | None = None


def looks_like_sample_log(first_line: str) -> bool:
    """Whether the first line of a file is a line of an lmms-eval samples log."""
    text = first_line.strip()
    if not text.startswith("{"):
        return False
    try:
        value = json_loads(text, check_text=False)
    except ValueError:
        # longer than the part read: lmms-eval writes doc_id first
        return text.replace(" ", "").startswith('{"doc_id":')
    return (
        isinstance(value, dict)
        and "doc_id" in value
        and bool({"filtered_resps", "resps"} & set(value))
    )


def _validation_error(exc: ValidationError, line: int, prefix: str = "") -> PredictionsFileError:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in (*([prefix] if prefix else []), *first["loc"]))
    return PredictionsFileError(first["msg"], line=line, field=where or None)


def _record(sample: SampleLine, line: int) -> RowRecord:
    """The row's record: the first metric field naming a row, else ``doc``."""
    extra = sample.model_extra or {}
    names = sorted(extra, key=lambda name: name != FIRST_METRIC)
    for name in names:
        value = extra[name]
        if isinstance(value, dict) and ({"question_id", "prompt_id"} & set(value)):
            try:
                record = RowRecord.model_validate(value)
            except ValidationError as exc:
                raise _validation_error(exc, line, name) from None
            if record.names_a_row():
                return record
    if sample.doc is not None and sample.doc.names_a_row():
        return sample.doc
    raise PredictionsFileError(
        "no metric record (such as 'overall') or doc with a question_id, or a prompt_id and "
        "criterion: is this a multi_crit samples log?",
        line=line,
        field="doc",
    )


def _raw_text(sample: SampleLine, line: int) -> str:
    """The judge's output as the task read it: ``str()`` of the first filtered response."""
    if sample.filtered_resps is not None:
        field_name, given = "filtered_resps", sample.filtered_resps
    elif sample.resps is not None:  # a request's unfiltered outputs are a list: its first
        given = [r[0] if isinstance(r, list) and r else r for r in sample.resps]
        field_name = "resps"
    else:
        raise PredictionsFileError("is missing", line=line, field="filtered_resps")
    # The task reads str() of the first response, and "" when there is none.
    text = "" if not given or given[0] is None else str(given[0])
    problem = text_problem(text, max_chars=JUDGE_OUTPUT_MAX_CHARS)
    if problem:
        raise PredictionsFileError(problem, line=line, field=field_name)
    return text


def prediction_line(value: dict, line: int) -> dict:
    """The predictions line for one samples-log line; PredictionsFileError names line and field."""
    return _read(value, line)[0]


def _read(value: dict, line: int) -> tuple[dict, RowRecord]:
    try:
        sample = SampleLine.model_validate(value)
    except ValidationError as exc:
        raise _validation_error(exc, line) from None
    record = _record(sample, line)
    out: dict[str, Any] = {"output": _raw_text(sample, line)}
    if record.question_id is not None:
        out["question_id"] = record.question_id
    else:
        out["prompt_id"], out["criterion"] = record.prompt_id, record.criterion
    split = record.benchmark_type or record.split or (sample.doc.split if sample.doc else None)
    if split:
        out["split"] = split
    return out, record


class SampleLog:
    """Turns the lines of a samples log into predictions lines, counting what it notices."""

    def __init__(self) -> None:
        self.verifier_lines: list[int] = []

    def records(self, lines: Iterator[LogLine]) -> Iterator[LogLine]:
        for line, value in lines:
            if isinstance(value, dict):
                try:
                    value = self._take(value, line)
                except PredictionsFileError as exc:
                    value = exc
            yield line, value

    def _take(self, value: dict, line: int) -> dict:
        out, record = _read(value, line)
        if record.parse_method == VERIFIER:
            self.verifier_lines.append(line)
        return out

    def warnings(self) -> list[str]:
        if not self.verifier_lines:
            return []
        lines = ", ".join(str(n) for n in self.verifier_lines[:5])
        more = ", ..." if len(self.verifier_lines) > 5 else ""
        return [
            f"{counted(len(self.verifier_lines), 'line')} without a direct verdict ({lines}{more}):"
            " lmms-eval read them with its verifier model; here the published rule alone reads"
            " them, so they count as wrong"
        ]
