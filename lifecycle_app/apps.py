from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    name = "lifecycle_app"
    verbose_name = "Data lifecycle: ends, deletions, retention, erasure"

    def ready(self) -> None:
        from . import endings  # noqa: F401  connects settle_on_end to session_ended
