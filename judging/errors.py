"""Input file errors that name the line (or row) and the field at fault."""

from __future__ import annotations


class InputFileError(ValueError):
    """A bad line in an input file; ``line`` is 1-based (a JSONL/CSV line or a Parquet row)."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None):
        self.message = message
        self.line = line
        self.field = field
        where = []
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class DatasetFileError(InputFileError):
    """A dataset file that does not follow the published Multi-Crit row format."""


class PredictionsFileError(InputFileError):
    """A predictions file that cannot be read or does not match the dataset."""
