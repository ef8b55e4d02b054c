"""The home page and the project overview."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from core.permissions import get_project_for_user, is_lead

from ..forms import HistorySearchForm, PageForm
from ..models import Criterion, Split
from ..selectors import annotator as selectors_annotator
from ..selectors import projects as selectors

HISTORY_PAGE_SIZE = 20


@login_required
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """Leads: every project. Annotators: their projects, progress, and their votes to revise."""
    progress = selectors_annotator.annotator_projects(user=request.user)
    context = {
        "projects": selectors.project_list_with_counts() if is_lead(request.user) else None,
        "progress": progress,
    }
    if progress:
        search = HistorySearchForm(request.GET)
        filters = search.filters()
        votes = selectors_annotator.annotator_votes(user=request.user, **filters)
        page = Paginator(votes, HISTORY_PAGE_SIZE).get_page(PageForm(request.GET).number())
        members = {p.member.project_id: p.member for p in progress}
        context.update(
            history=selectors_annotator.history_rows(list(page.object_list), members),
            history_page=page,
            search=filters,
            search_query="&".join(
                f"{k}={v}"
                for k, v in (("q", filters["query"]), ("project", filters["project_id"] or ""))
                if v
            ),
        )
    return render(request, "annotation/home.html", context)


@login_required
@require_safe
def guidelines(request: HttpRequest, slug: str) -> HttpResponse:
    """The project's annotation guidelines and every criterion's description, for its members."""
    project = get_project_for_user(request.user, slug)
    criteria = Criterion.objects.filter(project=project).order_by("split", "order", "key")
    by_split = {label: [c for c in criteria if c.split == value] for value, label in Split.choices}
    return render(
        request,
        "annotation/guidelines.html",
        {
            "project": project,
            "criteria_by_split": by_split,
            "is_project_lead": is_lead(request.user),
        },
    )


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
