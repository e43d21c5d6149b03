"""Two tenants on the replica test's own primary, each with an admin and two sessions.

Run by tests/replica/test_replica.py with DATABASE_URL at that primary. Prints
JSON: the session cookie's name and each admin's logged-in session key.
"""

import json

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402

from sessions_app.store import SessionStore  # noqa: E402
from stateroom.actor import Actor  # noqa: E402
from tenancy_app.models import Membership, Role, Tenant  # noqa: E402
from tenancy_app.scoping import in_tenant  # noqa: E402

out = {"cookie": settings.SESSION_COOKIE_NAME}
for slug, username, session_id in (("acme", "ada", "acme-s"), ("globex", "bob", "globex-s")):
    tenant = Tenant.objects.create(slug=slug, name=slug.title())
    user = get_user_model().objects.create_user(username=username, password="not-used-here-1")
    with in_tenant(tenant):
        Membership.objects.create(user=user, tenant=tenant, role=Role.ADMIN)
        for n in (1, 2):
            SessionStore(tenant, Actor.system("seed")).create(
                session_id=f"{session_id}{n}", user_id="u1"
            )
    client = Client()
    client.force_login(user)
    out[username] = client.cookies[settings.SESSION_COOKIE_NAME].value
print(json.dumps(out))
