"""Pages of the judging app: the leaderboard, scorecards and the predictions upload."""

from django.urls import path

from . import views, views_board

_VERSION = "projects/<slug:slug>/versions/<int:number>/"

urlpatterns = [
    path(
        "projects/<slug:slug>/leaderboard/",
        views_board.leaderboard_latest,
        name="leaderboard-latest",
    ),
    path(f"{_VERSION}leaderboard/", views.leaderboard, name="leaderboard"),
    path(
        f"{_VERSION}leaderboard.<str:fmt>",
        views_board.leaderboard_export,
        name="leaderboard-export",
    ),
    path(f"{_VERSION}compare/", views_board.judges_compare_page, name="judge-compare"),
    path(f"{_VERSION}predictions/upload/", views.predictions_upload, name="predictions-upload"),
    path(
        f"{_VERSION}predictions/jobs/<int:job_id>/",
        views.predictions_upload_status,
        name="predictions-upload-status",
    ),
    path(f"{_VERSION}runs/<int:run_id>/delete/", views.judge_run_delete, name="judge-run-delete"),
    # Judge names may hold a slash (organisation/model), so the judge is the last segment.
    path(f"{_VERSION}leaderboard/<path:judge>/", views.scorecard, name="scorecard"),
]
