"""Dataset routes of the REST API (mounted under /api/)."""

from django.urls import path

from ..api import views

_VERSION = "projects/<slug:slug>/versions/<int:number>/"

urlpatterns = [
    path("projects/", views.projects_list, name="api-projects"),
    path("projects/<slug:slug>/versions/", views.versions_list, name="api-versions"),
    path(_VERSION, views.version_detail, name="api-version"),
    path(f"{_VERSION}rows/", views.version_rows, name="api-version-rows"),
    path(f"{_VERSION}files/<str:kind>", views.version_file, name="api-version-file"),
]
