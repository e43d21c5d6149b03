"""Single sign-on with the tenant's OpenID Connect provider (issue 36).

- `crypto`: the client secret at rest (Fernet, `STATEROOM_SECRETS_KEY`).
- `store`: the tenant's provider configuration and its people (SsoStore).
- `mapping`: groups claim -> role and member groups, applied at every login and re-check.
- `provider`: discovery and the calls to the provider (through `stateroom.egress`).
- `backend`, `views`: mozilla-django-oidc's backend and views, per tenant.
- `session`: what a signed-in session remembers, the re-check, require-SSO and amr.
"""
