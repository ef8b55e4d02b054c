from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judge scoring"

    def ready(self) -> None:
        from . import media_rules  # noqa: F401  (registers who reads judging/uploads/)
