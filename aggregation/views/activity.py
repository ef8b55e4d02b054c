"""The dashboard's drill-down: one annotator's votes in the project, newest first."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from aggregation.selectors.activity import annotator_votes_page
from annotation.selectors.projects import project_get
from core.permissions import lead_required

from ..forms_samples import VotesPageForm


@require_GET
@lead_required
def annotator_votes(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    """Every vote of one annotator (a member or anyone who voted here), optionally of one day."""
    project = project_get(slug=slug)
    annotator = (
        get_user_model()
        .objects.filter(pk=user_id)
        .filter(Q(memberships__project=project) | Q(votes__sample__project=project))
        .distinct()
        .first()
    )
    if annotator is None:
        raise Http404("No such annotator in this project.")
    form = VotesPageForm(request.GET)
    values = form.values()
    data = annotator_votes_page(
        project=project, annotator_id=annotator.pk, day=values["day"], before=values["before"]
    )
    return render(
        request,
        "aggregation/annotator_votes.html",
        {
            "project": project,
            "annotator": annotator,
            "day": values["day"],
            "form": form,
            **data,
        },
    )
