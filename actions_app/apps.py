from django.apps import AppConfig


class ActionsConfig(AppConfig):
    name = "actions_app"
    verbose_name = "Actions across domains"
