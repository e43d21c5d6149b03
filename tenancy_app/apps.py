from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "tenancy_app"
    verbose_name = "Tenancy"

    def ready(self) -> None:
        from stateroom import edge  # noqa: F401  (starts the session clock at each login)

        from . import schema  # noqa: F401  (registers the OpenAPI auth extension)
