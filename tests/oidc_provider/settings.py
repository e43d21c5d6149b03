"""A stand-in OpenID Connect provider for the SSO tests: django-oauth-toolkit's OIDC server.

Not Stateroom: its own process, its own PostgreSQL database (`OP_DB`, a URL). Started by
tests/tenancy/sso/provider.py (`python -m tests.oidc_provider.serve`); its people,
their groups and `amr` are read from the JSON file `OP_USERS` at every token and
userinfo answer, so a test changes someone's groups by rewriting that file.
"""

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

SECRET_KEY = "oidc-provider-stand-in-" + "x" * 32
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
ROOT_URLCONF = "tests.oidc_provider.urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
_db = urlsplit(os.environ["OP_DB"])
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _db.path.lstrip("/"),
        "USER": unquote(_db.username or ""),
        "PASSWORD": unquote(_db.password or ""),
        "HOST": _db.hostname or "",
        "PORT": str(_db.port or ""),
    }
}
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
# Stateroom runs on 127.0.0.1 too: cookies do not tell ports apart.
SESSION_COOKIE_NAME = "op_session"
CSRF_COOKIE_NAME = "op_csrf"
LOGIN_URL = "/login/"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # a stand-in: fast
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": Path(os.environ["OP_KEY"]).read_text(),
    "PKCE_REQUIRED": True,
    "SCOPES": {"openid": "OpenID Connect", "profile": "Profile", "email": "Email"},
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.validator.Validator",
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
}
