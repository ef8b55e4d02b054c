from django.urls import path

from .views import pages

urlpatterns = [
    path("projects/<slug:slug>/curation/", pages.curation_page, name="curation"),
    path("projects/<slug:slug>/curation/pairs/", pages.curation_pairs, name="curation-pairs"),
    path(
        "projects/<slug:slug>/curation/decisions.csv",
        pages.curation_decisions_csv,
        name="curation-decisions-csv",
    ),
    path("projects/<slug:slug>/curation/promote/", pages.curation_promote, name="curation-promote"),
    path(
        "projects/<slug:slug>/curation/jobs/<int:job_id>/",
        pages.curation_job,
        name="curation-job",
    ),
]
