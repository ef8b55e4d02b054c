from django.urls import include, path

from .views import accounts, core, jobs, project_settings

urlpatterns = [
    path("", core.home, name="home"),
    # Before the project pattern, which would read "new" as a project's address.
    path("projects/new/", accounts.project_new, name="project-new"),
    path("projects/<slug:slug>/", core.project_detail, name="project-detail"),
    path(
        "projects/<slug:slug>/settings/",
        project_settings.project_settings,
        name="project-settings",
    ),
    path(
        "projects/<slug:slug>/criteria/<int:criterion_id>/",
        project_settings.criterion_edit,
        name="criterion-edit",
    ),
    path("jobs/<int:job_id>/", jobs.job_status, name="job-status"),
    path("jobs/<int:job_id>/cancel/", jobs.job_cancel, name="job-cancel"),
    path("jobs/<int:job_id>/retry/", jobs.job_retry, name="job-retry"),
    path("", include("annotation.urls_import")),
    path("", include("annotation.urls_members")),
    path("", include("annotation.urls_labeling")),
    path("", include("annotation.urls_reports")),
    path("", include("annotation.urls_accounts")),
    path("", include("annotation.urls_criteria")),
]
