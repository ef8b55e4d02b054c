"""The home page and the project overview."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from core.permissions import get_project_for_user, is_lead

from ..models import Criterion, Split
from ..selectors import projects as selectors


@login_required
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    context = {
        "projects": selectors.project_list_with_counts() if is_lead(request.user) else None,
        "memberships": selectors.memberships_for(user=request.user),
    }
    return render(request, "annotation/home.html", context)


@login_required
@require_safe
def project_detail(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for_user(request.user, slug)
    lead = is_lead(request.user)
    criteria = Criterion.objects.filter(project=project).order_by("split", "order")
    by_split = {label: [c for c in criteria if c.split == value] for value, label in Split.choices}
    return render(
        request,
        "annotation/project_detail.html",
        {"project": project, "criteria_by_split": by_split, "is_project_lead": lead},
    )
