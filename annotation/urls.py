from django.urls import include, path

from .views import core

urlpatterns = [
    path("", core.home, name="home"),
    path("projects/<slug:slug>/", core.project_detail, name="project-detail"),
    path("", include("annotation.urls_import")),
    path("", include("annotation.urls_labeling")),
]
