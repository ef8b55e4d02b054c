from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from . import media_rules  # noqa: F401  (registers who reads samples/ and imports/)
