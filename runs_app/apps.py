from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs_app"
    verbose_name = "Runs"

    def ready(self) -> None:
        from stateroom import ports

        from .claims import SessionRuns

        ports.session_runs.provide(SessionRuns())
