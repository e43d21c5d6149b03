from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console_app"
    verbose_name = "Console"
