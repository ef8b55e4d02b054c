from django.urls import path

from .views import jobs, tokens

urlpatterns = [
    path("jobs/<int:job_id>/", jobs.job_status, name="job-status"),
    path("jobs/<int:job_id>/cancel/", jobs.job_cancel, name="job-cancel"),
    path("jobs/<int:job_id>/retry/", jobs.job_retry, name="job-retry"),
    path("tokens/", tokens.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", tokens.token_revoke_view, name="token-revoke"),
]
