"""The REST API: each app contributes its routes."""

from django.urls import include, path

urlpatterns = [
    path("", include("aggregation.api.urls")),
    path("", include("judging.api.urls")),
]
