from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    name = "lifecycle_app"
    verbose_name = "Data lifecycle: ends, deletions, retention, erasure"
