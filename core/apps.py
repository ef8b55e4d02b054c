from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Shared plumbing: jobs, API tokens, access rules, media and file responses."""

    name = "core"

    def ready(self) -> None:
        """Skip the connection health check's round trip on a quiet connection."""
        from . import dbcheck

        dbcheck.connect()
