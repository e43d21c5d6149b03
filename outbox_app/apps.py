from django.apps import AppConfig


class OutboxConfig(AppConfig):
    name = "outbox_app"
    verbose_name = "Outbox"

    def ready(self) -> None:
        from stateroom import metrics

        from .metrics import depth

        metrics.register_source("outbox", depth)
