from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals_app"
    verbose_name = "Approvals"
