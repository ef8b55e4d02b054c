from django.urls import include, path

from .views import core, jobs

urlpatterns = [
    path("", core.home, name="home"),
    path("projects/<slug:slug>/", core.project_detail, name="project-detail"),
    path("jobs/<int:job_id>/", jobs.job_status, name="job-status"),
    path("", include("annotation.urls_import")),
    path("", include("annotation.urls_members")),
    path("", include("annotation.urls_labeling")),
]
