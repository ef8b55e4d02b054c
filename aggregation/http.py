"""The download of a version's stored file, shared by the lead's page and the dataset API."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from core.http import stored_file_response

from .models import DatasetFile

CONTENT_TYPES = {
    DatasetFile.Kind.JSONL: "application/x-ndjson",
    DatasetFile.Kind.JSONL_ZIP: "application/zip",
    DatasetFile.Kind.PARQUET: "application/vnd.apache.parquet",
    DatasetFile.Kind.MANIFEST: "application/json",
}


def version_file_response(request: HttpRequest, record: DatasetFile) -> HttpResponse:
    """A streamed download of one file of a version (Range and ETag honoured)."""
    return stored_file_response(
        request,
        file=record.file,
        size=record.size,
        sha256=record.sha256,
        content_type=CONTENT_TYPES.get(record.kind, "application/octet-stream"),
    )
