from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path
from django.views.decorators.http import require_safe
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from core.media import media_response
from core.permissions import media_file
from core.views import health


@login_required
@require_safe
def media(request: HttpRequest, path: str) -> HttpResponse:
    """Serve study data: sample images to the project's members, everything else to leads."""
    file = media_file(request.user, path)
    if file is None:
        raise Http404("No such file.")  # refused, malformed and missing paths look the same
    return media_response(request, file)


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """Answer browsers that ask for /favicon.ico whatever the page links: the site's SVG icon."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


urlpatterns = [
    path("", include("core.urls")),
    path("favicon.ico", favicon, name="favicon"),
    # Liveness and readiness probes, public (core.health); core.middleware answers them first,
    # whatever the host and scheme.
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("", include("annotation.urls")),
    path("", include("aggregation.urls")),
    path("", include("judging.urls")),
    path("", include("curation.urls")),
    path("api/", include("config.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(template_name="registration/login.html"),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # Sample images and export files are study data: core.permissions.media_file decides
    # who reads which; MEDIA_SERVE=x-accel or x-sendfile hands the bytes to the proxy.
    path(f"{settings.MEDIA_URL.strip('/')}/<path:path>", media, name="media"),
]
