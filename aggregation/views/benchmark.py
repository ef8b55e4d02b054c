"""The lead's page to import the published Multi-Crit benchmark as a ready version."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from aggregation.selectors.export import versions_ready
from annotation.forms import JobParamForm
from annotation.importing.sources import unsafe_path
from annotation.importing.uploads import UPLOAD_SUFFIXES
from annotation.models import Project
from core.http import queue_unavailable
from core.jobs import JobQueueUnavailable
from core.media import MediaUnwritable, media_unwritable_response
from core.models import Job
from core.permissions import lead_required

from ..services.benchmark import benchmark_upload_enqueue

MAX_FILES = 20


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (the release's shards)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ",".join(UPLOAD_SUFFIXES)}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None) -> list:
        items = data if isinstance(data, list | tuple) else [data]
        return [super(MultipleFileField, self).clean(item, initial) for item in items]


class BenchmarkUploadForm(forms.Form):
    files = MultipleFileField(
        label="Release files",
        help_text="The Parquet shards (one per split or more), the flattened JSONL, or a zip "
        "holding one data file with its images. Several files are read as one.",
    )
    images = forms.CharField(
        required=False,
        max_length=300,
        label="Images folder in the zip",
        help_text="Optional, for a zip: the folder image_path is relative to.",
    )

    def clean_files(self) -> list:
        files = self.cleaned_data["files"]
        if len(files) > MAX_FILES:
            raise forms.ValidationError(f"At most {MAX_FILES} files at once.")
        for upload in files:
            if not upload.name.lower().endswith(UPLOAD_SUFFIXES):
                raise forms.ValidationError(
                    f"{upload.name}: upload .parquet, .jsonl or .zip files."
                )
        return files

    def clean_images(self) -> str:
        images = self.cleaned_data["images"].strip().strip("/")
        reason = unsafe_path(images) if images else None
        if reason:
            raise forms.ValidationError(f"{reason}: {images!r}")
        return images


def _context(project: Project, form: BenchmarkUploadForm, job: Job | None) -> dict:
    versions = versions_ready(project=project).filter(manifest__labels__provenance="published")
    return {"project": project, "form": form, "job": job, "versions": versions}


@lead_required
def benchmark_import_page(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=slug)
    job = None
    if request.method == "POST":
        form = BenchmarkUploadForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                job = benchmark_upload_enqueue(
                    project=project,
                    files=form.cleaned_data["files"],
                    by=request.user,
                    images=form.cleaned_data["images"],
                )
            except (JobQueueUnavailable, MediaUnwritable) as exc:
                form.add_error(None, str(exc))
                page = render(request, "aggregation/benchmark.html", _context(project, form, None))
                if isinstance(exc, MediaUnwritable):
                    return media_unwritable_response(page, exc)
                return queue_unavailable(request, page)
            return redirect(f"{reverse('benchmark-import', args=[slug])}?job={job.pk}")
    else:
        form = BenchmarkUploadForm()
        job_id = JobParamForm(request.GET).job_id()
        if job_id is not None:
            job = Job.objects.filter(
                pk=job_id, kind=Job.Kind.IMPORT, project=project, params__benchmark=True
            ).first()
    return render(request, "aggregation/benchmark.html", _context(project, form, job))
