from django.apps import AppConfig


class EffectsConfig(AppConfig):
    name = "effects_app"
    verbose_name = "Effects"
