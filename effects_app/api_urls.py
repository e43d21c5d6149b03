"""Runtime API routes of effects_app, mounted under /api/v1/.

`runs/<run_id>/effects` lives under the runs path but is the effect ledger's.
"""

from django.urls import path

from . import api

urlpatterns = [
    path("runs/<pid:run_id>/effects", api.run_effects, name="api-run-effects"),
    path("effects", api.effect_list, name="api-effect-list"),
    path("effects/<pid:effect_id>/commit", api.effect_commit, name="api-effect-commit"),
    path("effects/<pid:effect_id>/fail", api.effect_fail, name="api-effect-fail"),
]
