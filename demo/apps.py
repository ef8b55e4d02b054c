from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The embedded demo: a project with simulated votes, built through the apps' services."""

    name = "demo"
    verbose_name = "Demo"
