"""The lead's import page: upload a file, follow its job, read every error of a refused file."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from core.http import queue_unavailable
from core.jobs import JobQueueUnavailable
from core.media import MediaUnwritable, media_unwritable_response
from core.models import Job
from core.permissions import lead_required

from ..curation import FILTERS
from ..forms import JobParamForm
from ..importing.limits import size_text
from ..importing.sources import unsafe_path
from ..importing.uploads import UPLOAD_SUFFIXES, import_upload_enqueue, upload_size_problem
from ..models import Project
from ..selectors import projects as selectors

RECENT = 10
FILTER_LABELS = {
    "length": "Length: drop pairs whose length ratio A/B is outside 0.7–1.4",
    "correctness": "Correctness (reasoning): keep pairs that are both right or both wrong",
    "ensemble": "Ensemble: drop pairs on which all three judges agree",
}


class ImportUploadForm(forms.Form):
    file = forms.FileField(
        label="Samples file",
        help_text="JSONL (our format or Multi-Crit rows), Parquet (Multi-Crit rows), or a zip "
        "holding one of them with its images.",
        widget=forms.ClearableFileInput(attrs={"accept": ",".join(UPLOAD_SUFFIXES)}),
    )
    images = forms.CharField(
        required=False,
        max_length=300,
        label="Images folder in the zip",
        help_text="Optional, for a zip: the folder that image_path is relative to (any folder "
        "of the zip, e.g. images); otherwise paths are relative to the data file.",
    )
    update = forms.BooleanField(
        required=False,
        label="Replace changed samples",
        help_text="Without this, a sample whose id exists with different content is an error.",
    )
    filters = forms.MultipleChoiceField(
        required=False,
        label="Curation filters",
        choices=[(name, FILTER_LABELS[name]) for name in FILTERS],
        widget=forms.CheckboxSelectMultiple,
        help_text="Applied in this order to formal samples; seed samples are never filtered.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit = size_text(settings.UPLOAD_MAX_BYTES)
        self.fields["file"].help_text += f" At most {limit}."

    def clean_file(self):
        file = self.cleaned_data["file"]
        if not file.name.lower().endswith(UPLOAD_SUFFIXES):
            raise forms.ValidationError("Upload a .jsonl, .parquet or .zip file.")
        problem = upload_size_problem(file)
        if problem:
            raise forms.ValidationError(problem)
        return file

    def clean(self) -> dict:
        data = super().clean()
        images = (data.get("images") or "").strip().strip("/")
        file = data.get("file")
        if images:
            reason = unsafe_path(images)
            if reason:
                self.add_error("images", f"{reason}: {images!r}")
            elif file is not None and not file.name.lower().endswith(".zip"):
                self.add_error("images", "An images folder is only for a zip upload.")
        data["images"] = images
        return data


def _context(project: Project, form: ImportUploadForm, job: Job | None) -> dict:
    recent = Job.objects.filter(project=project, kind=Job.Kind.IMPORT).select_related("created_by")[
        :RECENT
    ]
    return {"project": project, "form": form, "job": job, "recent": recent}


@lead_required
def import_upload(request: HttpRequest, slug: str) -> HttpResponse:
    project = selectors.project_get(slug=slug)
    job = None
    if request.method == "POST":
        form = ImportUploadForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                job = import_upload_enqueue(
                    project=project,
                    file=form.cleaned_data["file"],
                    by=request.user,
                    update=form.cleaned_data["update"],
                    filters=form.cleaned_data["filters"],
                    images=form.cleaned_data["images"],
                )
            except (JobQueueUnavailable, MediaUnwritable) as exc:
                form.add_error(None, str(exc))
                template = "annotation/import.html#upload-panel" if request.htmx else None
                page = render(
                    request, template or "annotation/import.html", _context(project, form, None)
                )
                if isinstance(exc, MediaUnwritable):
                    return media_unwritable_response(page, exc)
                return queue_unavailable(request, page)
            if request.htmx:
                # The panel with the new job, and the recent list updated out of band.
                return render(
                    request,
                    "annotation/_import_response.html",
                    _context(project, ImportUploadForm(), job),
                )
            return redirect(f"{reverse('import-upload', args=[slug])}?job={job.pk}")
        if request.htmx:
            return render(
                request, "annotation/import.html#upload-panel", _context(project, form, None)
            )
    else:
        form = ImportUploadForm()
        job_id = JobParamForm(request.GET).job_id()
        if job_id is not None:
            job = Job.objects.filter(pk=job_id, kind=Job.Kind.IMPORT, project=project).first()
    return render(request, "annotation/import.html", _context(project, form, job))


@lead_required
def import_job(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """The import job's card with its outcome: the summary, or every error of the file."""
    project = selectors.project_get(slug=slug)
    job = get_object_or_404(Job, pk=job_id, kind=Job.Kind.IMPORT, project=project)
    template = "annotation/import.html#import-job" if request.htmx else "annotation/import_job.html"
    return render(request, template, {"project": project, "job": job})
