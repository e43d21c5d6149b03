"""How a run is shown to its runtime: the body of GET /api/v1/runs/{id}, of the lists and
transitions (`runs_app.api`, `actions_app.api`), and of the run-control webhook
(`runs_app.tasks`).

Below the API, so that the webhook task builds its payload without importing the views.
"""

from rest_framework import serializers

from stateroom.api import EmptyAsNullCharField

from .models import Run, RunStatus
from .store import COST_DECIMAL_PLACES, COST_MAX_DIGITS


class RunOut(serializers.Serializer):
    run_id = serializers.CharField()
    session_id = serializers.CharField(source="session_public_id", allow_null=True)
    task_id = serializers.CharField(source="task_public_id", allow_null=True)
    status = serializers.ChoiceField(choices=RunStatus.choices)
    turn_index = serializers.IntegerField()
    active_agent = EmptyAsNullCharField()
    current_node_id = EmptyAsNullCharField()
    deadline_at = serializers.DateTimeField(allow_null=True)
    token_used = serializers.IntegerField(help_text="Tokens the run has used so far (a total)")
    cost_used = serializers.DecimalField(
        max_digits=COST_MAX_DIGITS,
        decimal_places=COST_DECIMAL_PLACES,
        coerce_to_string=True,
        help_text="What the run has cost so far (a total), a decimal string",
    )
    model = EmptyAsNullCharField(help_text="The model the runtime last reported; null: none")
    trace_id = serializers.CharField(
        allow_null=True,
        help_text="The W3C trace id (32 hex digits) of the call that created the run, or of "
        "the first call to it that carried a traceparent header; null: none did",
    )
    pending_approval_id = EmptyAsNullCharField()
    last_checkpoint_id = EmptyAsNullCharField()
    error = serializers.JSONField(allow_null=True)
    version = serializers.IntegerField()
    claimed_by = EmptyAsNullCharField(
        help_text="The worker that last claimed the run; null while nobody has (a run waiting "
        "for a person or ended is held by nobody)"
    )
    claim_until = serializers.DateTimeField(
        allow_null=True, help_text="The claim's lease: past it, another worker may claim the run"
    )
    unclaimed_since = serializers.DateTimeField(
        allow_null=True,
        help_text="Set while the run is running and no worker has held it (no live claim) "
        "for longer than the tenant's setting (2 minutes unless set): since when nobody "
        "holds it, the later of its last change and its last claim's end. A resumed or "
        "decided run waits here until its runtime claims it; null otherwise",
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


def run_data(run: Run) -> dict:
    """The run exactly as GET returns it."""
    return RunOut(run).data
