from django.urls import path

from .views import activity, benchmark, dashboard, jobs, review, samples, versions

urlpatterns = [
    path(
        "projects/<slug:slug>/aggregate/",
        jobs.aggregation_start,
        name="aggregation-start",
    ),
    path("projects/<slug:slug>/dashboard/", dashboard.dashboard, name="dashboard"),
    path("projects/<slug:slug>/review/", review.review_queue, name="review-queue"),
    path("projects/<slug:slug>/review/<int:sample_id>/", review.review_item, name="review-item"),
    path(
        "projects/<slug:slug>/review/<int:sample_id>/decide/",
        review.review_decide,
        name="review-decide",
    ),
    path(
        "projects/<slug:slug>/review/<int:sample_id>/mark/",
        review.review_mark,
        name="review-mark",
    ),
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
    path("projects/<slug:slug>/samples/", samples.sample_list, name="samples"),
    path(
        "projects/<slug:slug>/samples/<int:sample_id>/",
        samples.sample_detail_view,
        name="sample-detail",
    ),
    path(
        "projects/<slug:slug>/annotators/<int:user_id>/votes/",
        activity.annotator_votes,
        name="annotator-votes",
    ),
]
