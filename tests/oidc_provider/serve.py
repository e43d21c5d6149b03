"""Start the stand-in provider: `python -m tests.oidc_provider.serve PORT`.

Environment: OP_DB (its PostgreSQL database, a URL), OP_KEY (RSA private key, PEM), OP_USERS (the
people), OP_CLIENTS (JSON list of {client_id, client_secret, redirect_uri}).
Every person's password is their username reversed plus "-pw" (a stand-in).
"""

import json
import os
import sys


def main(port: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.oidc_provider.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from oauth2_provider.models import Application

    from tests.oidc_provider.validator import people

    call_command("migrate", verbosity=0)
    for username in people():
        get_user_model().objects.create_user(username, password=password_of(username))
    for client in json.loads(os.environ["OP_CLIENTS"]):
        Application.objects.create(
            name=client["client_id"],
            client_id=client["client_id"],
            client_secret=client["client_secret"],
            client_type=Application.CLIENT_CONFIDENTIAL,
            authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
            redirect_uris=client["redirect_uri"],
            algorithm=Application.RS256_ALGORITHM,
            skip_authorization=True,
        )
    call_command("runserver", f"127.0.0.1:{port}", use_reloader=False, use_threading=True)


def password_of(username: str) -> str:
    return username[::-1] + "-pw"


if __name__ == "__main__":
    main(sys.argv[1])
