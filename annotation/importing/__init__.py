"""Importing samples: our JSONL format and the published Multi-Crit row format (JSONL/Parquet)."""

from .errors import ImportRejected, Problem
from .service import ImportReport, samples_import

__all__ = ["ImportRejected", "ImportReport", "Problem", "samples_import"]
