"""Print a session's transcript export (`console_app.export.transcript`), as the console streams it.

Run by tests/pooler/test_jobs.py through PgBouncer, to compare with the same
export on a direct connection. Arguments: tenant slug, session id, format.
"""

import sys

import django

django.setup()

from console_app.export import transcript  # noqa: E402
from sessions_app.store import SessionStore  # noqa: E402
from stateroom.actor import Actor  # noqa: E402
from tenancy_app.models import Tenant  # noqa: E402
from tenancy_app.scoping import in_tenant  # noqa: E402

slug, session_id, fmt = sys.argv[1:4]
tenant = Tenant.objects.get(slug=slug)
actor = Actor.system("export")
with in_tenant(tenant):
    session = SessionStore(tenant, actor).get(session_id)
sys.stdout.write("".join(transcript(tenant, actor, session, fmt)))
