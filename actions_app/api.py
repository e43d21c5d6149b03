"""Runtime API calls that span domains: the run transition, which may end a run.

The run is looked up first (an unknown or other tenant's id is 404 whatever
the body), then the body is validated (runs_app.api's serializer), then one
action runs.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.decorators import api_view
from rest_framework.response import Response

from audit_app.actor import Actor
from runs_app.api import RunOut, RunTransitionIn, run_data
from stateroom.api import validated
from stateroom.api_schema import ERRORS_STATEFUL, error

from .runs import RunActions


@extend_schema(
    operation_id="runs_transition",
    summary="Compare-and-set: change the run if it is still at expected_version",
    request=RunTransitionIn,
    responses={
        200: OpenApiResponse(RunOut, description="The run at version + 1"),
        **ERRORS_STATEFUL,
        409: error(
            "version_conflict (details.current_version): the run changed since it was read; "
            "invalid_transition (details.from, details.to): the status change is not allowed "
            "or the run has finished"
        ),
    },
    description=(
        "Exactly one of several writers with the same expected_version wins; the others get "
        "409 version_conflict with the current version. Fields left out stay as they are. "
        "A run that ends (succeeded, failed, cancelled) waits on nothing: its pending "
        "approval is cancelled in the same transaction."
    ),
)
@api_view(["POST"])
def run_transition(request, run_id: str):
    actions = RunActions(request.tenant, Actor.from_request(request))
    changes = validated(RunTransitionIn, request, lookup=lambda: actions.runs.get(run_id))
    expected_version = changes.pop("expected_version")
    run = actions.compare_and_set(run_id=run_id, expected_version=expected_version, changes=changes)
    return Response(run_data(run))
