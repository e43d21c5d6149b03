"""Secrets at rest (a tenant's OIDC client secret): Fernet from `cryptography`.

The key is `STATEROOM_SECRETS_KEY`: one or more Fernet keys, comma-separated,
the first encrypts and all decrypt (rotation: put the new key first). Unset, a
key is derived from SECRET_KEY (HKDF-SHA256): changing SECRET_KEY then makes
stored secrets unreadable, so production sets its own key.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

__all__ = ["InvalidToken", "decrypt", "encrypt"]


def _fernet() -> MultiFernet:
    keys = [k.strip() for k in (settings.STATEROOM_SECRETS_KEY or "").split(",") if k.strip()]
    if not keys:
        derived = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"stateroom secrets at rest"
        ).derive(settings.SECRET_KEY.encode())
        keys = [base64.urlsafe_b64encode(derived).decode()]
    return MultiFernet([Fernet(key) for key in keys])


def encrypt(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode()


def decrypt(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode()
