from django.urls import path

from .views import imports

urlpatterns = [
    path("projects/<slug:slug>/import/", imports.import_upload, name="import-upload"),
    path("projects/<slug:slug>/import/jobs/<int:job_id>/", imports.import_job, name="import-job"),
]
