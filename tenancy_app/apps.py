from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "tenancy_app"
    verbose_name = "Tenancy"

    def ready(self) -> None:
        from stateroom import edge  # noqa: F401  (starts the session clock at each login)

        from . import login, schema  # noqa: F401  (signal receivers; the OpenAPI auth extension)
