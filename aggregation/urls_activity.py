from django.urls import path

from .views import activity

urlpatterns = [
    path(
        "projects/<slug:slug>/annotators/<int:user_id>/votes/",
        activity.annotator_votes,
        name="annotator-votes",
    ),
]
