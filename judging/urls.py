"""Pages of the judging app: the leaderboard, scorecards and the predictions upload."""

from django.urls import path

from . import views

_VERSION = "projects/<slug:slug>/versions/<int:number>/"

urlpatterns = [
    path(f"{_VERSION}leaderboard/", views.leaderboard, name="leaderboard"),
    path(f"{_VERSION}predictions/upload/", views.predictions_upload, name="predictions-upload"),
    path(
        f"{_VERSION}predictions/jobs/<int:job_id>/",
        views.predictions_upload_status,
        name="predictions-upload-status",
    ),
    path(f"{_VERSION}judge-runs/", views.judge_run_start, name="judge-run-start"),
    path(f"{_VERSION}judge-runs/<int:job_id>/", views.judge_run_status, name="judge-run-status"),
    path("judges/configs/", views.judge_configs, name="judge-configs"),
    path("judges/configs/<int:config_id>/", views.judge_config_edit, name="judge-config-edit"),
    path(f"{_VERSION}runs/<int:run_id>/delete/", views.judge_run_delete, name="judge-run-delete"),
    # Judge names may hold a slash (organisation/model), so the judge is the last segment.
    path(f"{_VERSION}leaderboard/<path:judge>/", views.scorecard, name="scorecard"),
]
