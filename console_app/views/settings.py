"""Tenant settings that reach into the domains: the retention policy with its dry run."""

from django.contrib import messages
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from lifecycle_app import retention
from lifecycle_app.content import CLASSES
from stateroom.actor import Actor
from stateroom.htmx import redirect_after_post
from tenancy_app.access import require_permission
from tenancy_app.forms import RetentionForm
from tenancy_app.models import RetentionPolicy
from tenancy_app.permissions import Permission
from tenancy_app.store import TenancyStore


def _store(request) -> TenancyStore:
    return TenancyStore(request.tenant, Actor.from_request(request))


def _retention_page(request, *, form=None, status=200, unsaved=None):
    store = _store(request)
    policy = store.retention()
    dry_run = retention.preview(request.tenant, policy=unsaved)
    due_classes = [
        {"label": ", ".join(CLASSES[cls].label for cls in facts["classes"]), **facts}
        for facts in dry_run["retention"]["classes"].values()
    ]
    return render(
        request,
        "tenancy/retention.html",
        {
            "nav": "settings",
            "tab": "retention",
            "policy": policy,
            "preview": dry_run,
            "due_classes": due_classes,
            "form": form
            or RetentionForm(initial={f: getattr(policy, f) for f in RetentionForm.base_fields}),
            "unsaved": unsaved is not None,
        },
        status=status,
    )


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def settings_retention(request):
    """The tenant's retention policy, and what it would delete now (a dry run of the job)."""
    if request.method == "GET":
        return _retention_page(request)
    form = RetentionForm(request.POST)
    if not form.is_valid():
        return _retention_page(request, form=form, status=422)
    if "dry_run" in request.POST:
        # The form's values, not saved: what they would delete. A POST (not a GET
        # form) so the CSRF token never lands in a URL, its history and its logs.
        unsaved = RetentionPolicy(tenant=request.tenant, **form.cleaned_data)
        return _retention_page(request, form=form, unsaved=unsaved)
    _store(request).set_retention(**form.cleaned_data)
    messages.success(request, "Retention policy saved.")
    url = reverse("tenancy:retention", kwargs={"tenant_slug": request.tenant.slug})
    return redirect_after_post(request, url)
