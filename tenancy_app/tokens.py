from datetime import timedelta

from django.utils import timezone

from .models import RuntimeToken, hash_secret

# last_used_at is refreshed at most this often, so the hot path does not write on every call.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def resolve_bearer(header: str) -> RuntimeToken | None:
    """The live token for an `Authorization: Bearer …` header, or None."""
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        return None
    token = (
        RuntimeToken.objects.select_related("tenant")
        .filter(secret_hash=hash_secret(raw.strip()), revoked_at__isnull=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        RuntimeToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
