"""The product's URLs plus one view that fails, to see the server error page as deployed."""

from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def fail(request: HttpRequest) -> HttpResponse:
    """Raise an unhandled error, as a bug in any view would."""
    raise RuntimeError("secret detail that must not reach the browser")


urlpatterns = [
    path("test-only/fail/", fail),
    path("", include("config.urls")),
]
