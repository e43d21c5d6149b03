"""Claims from the JSON file `OP_USERS`: {username: {"groups": [...], "amr": [...], ...}}."""

import json
import os

from oauth2_provider.oauth2_validators import OAuth2Validator


def people() -> dict:
    with open(os.environ["OP_USERS"]) as handle:
        return json.load(handle)


class Validator(OAuth2Validator):
    oidc_claim_scope = None  # every claim in the ID token and userinfo, whatever the scopes

    def get_additional_claims(self, request):
        username = request.user.get_username()
        person = people().get(username, {})
        claims = {
            "preferred_username": username,
            "email": person.get("email", f"{username}@example.test"),
            "groups": person.get("groups", []),
        }
        if person.get("amr"):
            claims["amr"] = person["amr"]
        if person.get("acr"):
            claims["acr"] = person["acr"]
        return claims
