from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit_app"
    verbose_name = "Audit"

    def ready(self) -> None:
        from stateroom import ports

        from . import proxy, services  # noqa: F401  (proxy: the deploy check)

        ports.audit.provide(services)
