from django.urls import path

from .views import benchmark, versions

urlpatterns = [
    path("projects/<slug:slug>/versions/", versions.versions, name="versions"),
    path("projects/<slug:slug>/versions/build/", versions.version_build, name="version-build"),
    path(
        "projects/<slug:slug>/versions/<int:number>/",
        versions.version_detail,
        name="version-detail",
    ),
    path(
        "projects/<slug:slug>/versions/<int:number>/files/<str:kind>",
        versions.version_file,
        name="version-file",
    ),
    path(
        "projects/<slug:slug>/benchmark/",
        benchmark.benchmark_import_page,
        name="benchmark-import",
    ),
]
