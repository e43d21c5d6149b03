from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications_app"
    verbose_name = "Notifications"

    def ready(self) -> None:
        from stateroom import ports

        from .fanout import handle_notice

        ports.approval_notices.provide(handle_notice)
