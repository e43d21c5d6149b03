from django.apps import AppConfig


class OutboxConfig(AppConfig):
    name = "outbox_app"
    verbose_name = "Outbox"
