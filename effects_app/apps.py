from django.apps import AppConfig


class EffectsConfig(AppConfig):
    name = "effects_app"
    verbose_name = "Effects"

    def ready(self) -> None:
        from stateroom import ports

        ports.provide_lookup("effect", _found_effects)


def _found_effects(tenant, ids: set[str]) -> set[str]:
    """Which of `ids` name effects of the tenant (the ids a task's state names must exist)."""
    from .models import ExternalEffect

    return set(
        ExternalEffect.objects.filter(tenant=tenant, effect_id__in=ids).values_list(
            "effect_id", flat=True
        )
    )
