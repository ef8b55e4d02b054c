from django.urls import path

from .views import benchmark, tokens, versions

urlpatterns = [
    path("projects/<slug:slug>/versions/", versions.versions, name="versions"),
    path("projects/<slug:slug>/versions/build/", versions.version_build, name="version-build"),
    path(
        "projects/<slug:slug>/versions/<int:number>/",
        versions.version_detail,
        name="version-detail",
    ),
    path(
        "projects/<slug:slug>/versions/<int:number>/notes/",
        versions.version_notes,
        name="version-notes",
    ),
    path(
        "projects/<slug:slug>/versions/<int:number>/dataset-card.md",
        versions.version_card_file,
        name="version-card",
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
    path("tokens/", tokens.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", tokens.token_revoke_view, name="token-revoke"),
]
