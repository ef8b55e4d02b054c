from django.urls import path

from .views import dashboard, review

urlpatterns = [
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
]
