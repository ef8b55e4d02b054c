"""Judging routes of the REST API (mounted under /api/)."""

from django.urls import path

from ..api import compare, views

_VERSION = "projects/<slug:slug>/versions/<int:number>/"

urlpatterns = [
    path(f"{_VERSION}predictions/", views.predictions_submit, name="api-predictions-submit"),
    path(f"{_VERSION}scorecards/", views.scorecards_list, name="api-scorecards"),
    path(f"{_VERSION}compare/", compare.judges_compare, name="api-judges-compare"),
    # The split comes first so that a judge name may hold a slash (organisation/model).
    path(
        f"{_VERSION}scorecards/<str:split>/<path:judge>/",
        views.scorecard_detail,
        name="api-scorecard",
    ),
]
