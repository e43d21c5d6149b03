from django.apps import AppConfig


class DemoConfig(AppConfig):
    """Demo data and the simulated agent runtime behind `make demo`."""

    name = "demo_app"
    verbose_name = "Demo"
