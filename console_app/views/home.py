"""The sign-in landing (to the user's first tenant) and the tenant's home page: what needs a
person now, across every domain.
"""

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tasks_app.store import TaskStateStore
from tenancy_app.access import memberships_of


@login_required
@require_GET
def home(request):
    """Send a user to their (first) tenant's console, or explain why there is none."""
    memberships = memberships_of(request.user.pk)
    if not memberships:
        return render(request, "console/home/no_tenant.html", status=403)
    return redirect("tenant-home", tenant_slug=memberships[0].tenant.slug)


@require_GET
def tenant_home(request):
    """What needs a person now, and what is going on: counts by status, each a link to its list."""
    actor = Actor.from_request(request)

    def by_status(queryset) -> dict[str, int]:
        rows = queryset.order_by().values_list("status").annotate(n=Count("id"))
        return dict(rows)

    sessions = by_status(SessionStore(request.tenant, actor).list_sessions())
    runs = by_status(RunStateStore(request.tenant, actor).list_runs())
    tasks = by_status(TaskStateStore(request.tenant, actor).list_tasks())
    # The same query as the effects queue the count links to.
    effects_to_settle = EffectStore(request.tenant, actor).needing_a_person().count()
    return render(
        request,
        "console/home/home.html",
        {
            "sessions": sessions,
            "runs": runs,
            "tasks": tasks,
            "effects_to_settle": effects_to_settle,
        },
    )
