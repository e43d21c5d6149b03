from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit_app"
    verbose_name = "Audit"
