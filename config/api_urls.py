"""The REST API: each app contributes its routes."""

from django.urls import include, path

urlpatterns = [
    path("", include("aggregation.api_urls")),
    path("", include("judging.api_urls")),
]
