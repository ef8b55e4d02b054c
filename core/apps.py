from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Shared plumbing: jobs, API tokens, access rules, media and file responses."""

    name = "core"
