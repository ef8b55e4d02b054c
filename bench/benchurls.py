"""The product's URLs plus one minimal comparison view, served only by bench/labeling.py."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.decorators.http import require_POST

from annotation.models import ProjectMember
from core.models import Job


@login_required
@require_POST
def minimal(request: HttpRequest, slug: str) -> HttpResponse:
    """One indexed read and one insert, behind the same middleware as the labeling screen."""
    member = ProjectMember.objects.filter(project__slug=slug, user=request.user).first()
    Job.objects.create(kind=Job.Kind.AGGREGATE, message=f"bench {member.pk if member else 0}")
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [
    path("bench/<slug:slug>/minimal/", minimal, name="bench-minimal"),
    path("", include("config.urls")),
]
