"""The lead's dataset versions: list with figures, build form and live job card, files.

Every page here is the lead's; the rows and files still go through the one access rule of
:mod:`aggregation.selectors.export`, like the API's.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.forms import refusal
from annotation.models import Project
from core.http import queue_unavailable
from core.jobs import JobQueueUnavailable
from core.permissions import lead_required

from ..forms import VersionBuildForm, VersionNotesForm
from ..http import version_file_response
from ..models import DatasetVersion
from ..selectors import export as selectors
from ..selectors import versions as selectors_versions
from ..services.version_notes import version_notes_update
from ..services.versions import version_build_start

PREVIEW_ROWS = 20
#: Changed rows listed per page of the diff against the previous version.
CHANGES_PER_PAGE = 50


def _get_project(slug: str) -> Project:
    return get_object_or_404(Project, slug=slug)


@lead_required
@require_GET
def versions(request: HttpRequest, slug: str) -> HttpResponse:
    project = _get_project(slug)
    context = {
        "project": project,
        "versions": selectors.versions_all(project=project),
        "job": selectors.build_job_latest(project=project),
    }
    if request.htmx and request.GET.get("part") == "table":
        return render(request, "aggregation/versions.html#versions-table", context)
    return render(request, "aggregation/versions.html", context)


@lead_required
@require_POST
def version_build(request: HttpRequest, slug: str) -> HttpResponse:
    project = _get_project(slug)
    form = VersionBuildForm(request.POST)
    if not form.is_valid():
        return refusal(form)
    try:
        job = version_build_start(
            project=project,
            by=request.user,
            include_votes=form.cleaned_data["include_votes"],
            include_seeds=form.cleaned_data["include_seeds"],
            include_contested=form.cleaned_data["include_contested"],
        )
    except JobQueueUnavailable as exc:
        if request.htmx:
            return queue_unavailable(request)
        messages.error(request, str(exc))
        return redirect("versions", slug=project.slug)
    if request.htmx:
        job.refresh_from_db()  # an eager run (no broker) has already finished it
        response = render(request, "core/job.html#job-card", {"job": job})
        response["HX-Trigger"] = "version-build-started"
        return response
    messages.success(request, "The build has started; the new version appears when it is ready.")
    return redirect("versions", slug=project.slug)


def _detail_context(
    request: HttpRequest,
    project: Project,
    version: DatasetVersion,
    notes_form: VersionNotesForm | None = None,
) -> dict:
    manifest = version.manifest or {}
    counts = manifest.get("counts", {})
    agreement = manifest.get("agreement", {})
    context = {
        "project": project,
        "version": version,
        "manifest": manifest,
        "counts": counts,
        "agreement": agreement,
        "splits": [
            {
                "split": split,
                **stats,
                "per_criterion": dict(sorted(stats.get("per_criterion", {}).items())),
                "agreement": agreement.get(split) or {},
            }
            # JSONB keeps its own key order; show the splits and criteria sorted.
            for split, stats in sorted(counts.get("per_split", {}).items())
        ],
        "manifest_json": json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=True),
        "rows": [r.data for r in selectors.version_rows(version=version)[:PREVIEW_ROWS]]
        if selectors.version_rows_readable(user=request.user, version=version)
        else [],
        "preview_rows": PREVIEW_ROWS,
        "lead_only_kinds": selectors.version_lead_only_kinds(version=version),
        "notes_form": notes_form or VersionNotesForm(initial={"notes": version.lead_notes}),
    }
    if version.status == DatasetVersion.Status.READY:
        previous = selectors_versions.version_previous(version=version)
        diff = (
            selectors_versions.version_diff(version=version, previous=previous)
            if previous
            else None
        )
        context.update(
            card=selectors_versions.version_card(version=version),
            previous=previous,
            diff=diff,
            changes=Paginator(diff.changes, CHANGES_PER_PAGE).get_page(request.GET.get("changes"))
            if diff
            else None,
        )
    return context


@lead_required
@require_GET
def version_detail(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    project = _get_project(slug)
    version = get_object_or_404(
        selectors.versions_all(project=project).select_related("job"), number=number
    )
    return render(
        request, "aggregation/versions_detail.html", _detail_context(request, project, version)
    )


@lead_required
@require_POST
def version_notes(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Save the lead's notes on a version; htmx gets the notes panel back."""
    project = _get_project(slug)
    version = get_object_or_404(selectors.versions_ready(project=project), number=number)
    form = VersionNotesForm(request.POST)
    if form.is_valid():
        version_notes_update(version=version, notes=form.cleaned_data["notes"], by=request.user)
        if not request.htmx:
            messages.success(request, f"The notes on version {version.number} are saved.")
            return redirect("version-detail", slug=project.slug, number=version.number)
        context = {
            "project": project,
            "version": version,
            "notes_saved": True,
            "card": selectors_versions.version_card(version=version),
        }
        context["notes_form"] = VersionNotesForm(initial={"notes": version.lead_notes})
        return render(request, "aggregation/versions_detail.html#notes", context)
    if request.htmx:
        context = {"project": project, "version": version, "notes_form": form}
        return render(request, "aggregation/versions_detail.html#notes", context, status=422)
    context = _detail_context(request, project, version, notes_form=form)
    return render(request, "aggregation/versions_detail.html", context, status=422)


@lead_required
@require_GET
def version_card_file(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """The version's dataset card as a Markdown file."""
    project = _get_project(slug)
    version = get_object_or_404(selectors.versions_ready(project=project), number=number)
    response = HttpResponse(
        selectors_versions.version_card(version=version),
        content_type="text/markdown; charset=utf-8",
    )
    name = f"{project.slug}-v{version.number}-dataset-card.md"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@lead_required
@require_GET
def version_file(request: HttpRequest, slug: str, number: int, kind: str) -> HttpResponse:
    project = _get_project(slug)
    version = get_object_or_404(selectors.versions_ready(project=project), number=number)
    record = selectors.version_file_for(user=request.user, version=version, kind=kind)
    return version_file_response(request, record)
