"""The download of a version's stored file, shared by the lead's page and the dataset API."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from core.http import stored_file_response

from .models import DatasetFile

#: The media type each kind of file is served as (and documented with in the API schema).
CONTENT_TYPES = {
    DatasetFile.Kind.JSONL: "application/x-ndjson",
    DatasetFile.Kind.CONTESTED: "application/x-ndjson",
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
        content_type=CONTENT_TYPES[record.kind],
    )
