from django.apps import AppConfig


class AggregationConfig(AppConfig):
    name = "aggregation"
    verbose_name = "Aggregation, review and export"
