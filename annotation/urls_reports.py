from django.urls import path

from .views import reports

urlpatterns = [
    path("projects/<slug:slug>/reports/", reports.reports, name="reports"),
    path(
        "projects/<slug:slug>/reports/<int:report_id>/close/",
        reports.report_close_view,
        name="report-close",
    ),
]
