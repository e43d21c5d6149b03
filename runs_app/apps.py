from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs_app"
    verbose_name = "Runs"
