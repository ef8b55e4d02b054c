"""The lead's sample browser: search and filter every sample, open one with its votes."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from aggregation.selectors.samples import sample_detail, samples_page
from annotation.models import Sample
from annotation.selectors.projects import project_get
from core.permissions import lead_required

from ..forms_samples import SampleFilterForm


@require_GET
@lead_required
def sample_list(request: HttpRequest, slug: str) -> HttpResponse:
    """A page of samples matching the filters, 50 at a time by id."""
    project = project_get(slug=slug)
    form = SampleFilterForm(request.GET, project=project)
    filters = form.filters()
    data = samples_page(project=project, filters=filters, **form.position())
    kept = {
        k: v
        for k, v in request.GET.items()
        if k in form.fields and k not in ("after", "before") and k not in form.errors and v
    }
    return render(
        request,
        "aggregation/samples.html",
        {
            "project": project,
            "form": form,
            "filters": filters,
            "qs": urlencode(kept),
            **data,
        },
    )


@require_GET
@lead_required
def sample_detail_view(request: HttpRequest, slug: str, sample_id: int) -> HttpResponse:
    """One sample: the prompt, both responses, and per criterion its label and every vote."""
    project = project_get(slug=slug)
    sample = get_object_or_404(Sample, project=project, pk=sample_id)
    return render(
        request,
        "aggregation/sample_detail.html",
        {"project": project, "sample": sample, **sample_detail(project=project, sample=sample)},
    )
