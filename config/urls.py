from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.static import serve
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation.permissions import media_allowed


@login_required
def media(request: HttpRequest, path: str) -> HttpResponse:
    """Serve study data: sample images to the project's members, everything else to leads."""
    if not media_allowed(request.user, path):
        raise PermissionDenied("You may not read this file.")
    return serve(request, path, document_root=settings.MEDIA_ROOT)


urlpatterns = [
    path("", include("annotation.urls")),
    path("", include("aggregation.urls")),
    path("", include("judging.urls")),
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
    # Sample images and export files are study data: only logged-in users get them. A large
    # deployment can put a proxy's internal redirect in front of this view.
    path(f"{settings.MEDIA_URL.strip('/')}/<path:path>", media, name="media"),
]
