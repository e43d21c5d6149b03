"""How an approval is shown to its runtime: the body of GET /api/v1/approvals/{id}, of the
lists and decisions (`approvals_app.api`), and of the decision webhook (`approvals_app.tasks`).

Below the API, so that the webhook task builds its payload without importing the views.
"""

from rest_framework import serializers

from stateroom.api import EmptyAsNullCharField
from stateroom.contract import StrictCharField, StrictIntegerField, StrictSerializer

from .display import DEFAULT_MINOR_UNITS, MAX_AMOUNTS, MAX_MINOR_UNITS
from .models import ApprovalRequest, ApprovalStatus, Decision, Risk, ToolOutcome, VoidReason
from .store import MAX_ARGUMENT_NAME_LENGTH


class AmountHint(StrictSerializer):
    argument = StrictCharField(
        max_length=MAX_ARGUMENT_NAME_LENGTH,
        help_text="The argument holding the amount, an integer count of minor units (cents)",
    )
    currency = StrictCharField(
        min_length=3, max_length=3, help_text="ISO 4217 code, upper case, e.g. EUR"
    )
    minor_units = StrictIntegerField(
        required=False,
        min_value=0,
        max_value=MAX_MINOR_UNITS,
        help_text=f"Digits after the decimal point (default {DEFAULT_MINOR_UNITS}; JPY 0)",
    )


class DisplayHint(StrictSerializer):
    """How the console shows the call; it changes nothing else (not the call digest)."""

    amounts = serializers.ListField(
        child=AmountHint(),
        max_length=MAX_AMOUNTS,
        help_text=f"Up to {MAX_AMOUNTS} arguments that are amounts of money: the console "
        "shows `230000` with EUR and 2 minor units as `EUR 2,300.00`",
    )


class Assignees(serializers.Serializer):
    user_ids = serializers.ListField(child=serializers.IntegerField(), source="assigned_user_ids")
    group_ids = serializers.ListField(child=serializers.IntegerField(), source="assigned_group_ids")


class ApprovalSerializer(serializers.Serializer):
    """An approval as the runtime sees it (GET, lists, decisions, webhooks)."""

    approval_id = serializers.CharField()
    run_id = serializers.CharField(source="run.run_id")
    status = serializers.ChoiceField(
        choices=ApprovalStatus.choices,
        help_text=(
            "approved: the call runs (as asked, or edited); rejected: it does not, the model "
            "gets the reason; responded: it does not, the model gets the operator's response; "
            "expired from expires_at on, whether or not the expiry sweep has run"
        ),
    )
    tool_name = serializers.CharField()
    arguments = serializers.DictField()
    risk = serializers.ChoiceField(choices=Risk.choices)
    reason = serializers.CharField(help_text="Why the runtime asked")
    summary = serializers.CharField(help_text="The runtime's one-line summary of the call")
    key_arguments = serializers.ListField(
        child=serializers.CharField(), help_text="The argument names the inbox shows first"
    )
    usual_arguments = serializers.DictField(
        allow_null=True, help_text="The tool's usual call, if the runtime gave one"
    )
    display = DisplayHint(allow_null=True, help_text="The runtime's display hint, if any")
    allowed_decisions = serializers.ListField(
        child=serializers.ChoiceField(choices=Decision.choices),
        help_text="The decisions the runtime declared it can honour",
    )
    arguments_schema = serializers.DictField(
        allow_null=True,
        help_text="The tool's JSON Schema for its arguments, if the runtime sent one",
    )
    call_digest = serializers.CharField(
        help_text=(
            "sha256 hex of the RFC 8785 canonical JSON (JCS) of `[tool_name, arguments]`: "
            "keys sorted by UTF-16 code units, no whitespace, UTF-8, numbers as ECMAScript "
            "prints them"
        )
    )
    run_version = serializers.IntegerField(
        help_text="The run's version when it started waiting on this approval"
    )
    decided_by = EmptyAsNullCharField()
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_reason = EmptyAsNullCharField(
        help_text="Why it was approved, rejected, responded to or cancelled"
    )
    decision = serializers.ChoiceField(
        choices=Decision.choices,
        allow_null=True,
        source="decision_or_none",
        help_text="approve or edit (status approved), reject (rejected), respond (responded)",
    )
    approved_arguments = serializers.DictField(
        allow_null=True, help_text="edit: the arguments to run instead; null otherwise"
    )
    response = EmptyAsNullCharField(
        help_text="respond: the operator's text, to give the model as the tool's result"
    )
    first_approved_by = EmptyAsNullCharField(
        help_text="Four-eyes: the first of two approvers of a critical call"
    )
    first_approval_reason = EmptyAsNullCharField(help_text="Four-eyes: the first approver's reason")
    expires_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    voided_by = EmptyAsNullCharField(help_text="voided: the runtime token that voided it")
    voided_at = serializers.DateTimeField(allow_null=True)
    void_reason_code = serializers.ChoiceField(
        choices=VoidReason.choices,
        allow_null=True,
        source="void_code_or_none",
        help_text="voided: why (tool_changed: the tool's schema changed since this was asked)",
    )
    void_reason = EmptyAsNullCharField(help_text="voided: the runtime's own words")
    void_details = serializers.DictField(
        allow_null=True, help_text="voided: the runtime's evidence, e.g. {tool, old, new} schemas"
    )
    replaces_approval_id = serializers.CharField(
        allow_null=True,
        source="replaces_public_id",
        help_text="The voided approval this one asks again, if any",
    )
    outcome = serializers.ChoiceField(
        choices=ToolOutcome.choices,
        allow_null=True,
        source="outcome_or_none",
        help_text=(
            "approved: how the call went when it ran, as its runtime reported it "
            "(POST /approvals/{id}/outcome); null until reported"
        ),
    )
    outcome_error = serializers.DictField(
        allow_null=True, help_text="outcome failed: the tool's error {message, type?}"
    )
    outcome_at = serializers.DateTimeField(allow_null=True)
    assignees = Assignees(
        source="*",
        help_text=(
            "Who is asked to decide: the tenant's members and member groups (ids) its routing "
            "rule named when it was asked, or an operator since (reassigned, taken, escalated); "
            "both empty: anyone of the tenant's operators"
        ),
    )
    route_rule = serializers.CharField(
        source="route_rule.name",
        allow_null=True,
        help_text="The name of the routing rule that chose them (null: none matched)",
    )


def approval_data(approval: ApprovalRequest) -> dict:
    """The approval exactly as GET returns it."""
    return ApprovalSerializer(approval).data
