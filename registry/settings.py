"""One environment-driven settings file. Defaults give the embedded deployment (SQLite, eager Celery).

Every environment variable it reads, with its default, is listed in docs/operations.md ("Environment").
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

from registry.environment import env_bool, env_int, env_list
from registry.keyfiles import create_once

BASE_DIR = Path(__file__).resolve().parent.parent


DATA_DIR = Path(os.environ.get("BENCHREG_DATA_DIR") or BASE_DIR / "data").resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    if os.environ.get("SECRET_KEY"):
        return os.environ["SECRET_KEY"]
    path = create_once(DATA_DIR / "secret_key", lambda: secrets.token_urlsafe(50).encode())
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
# Django's test set-up adds "testserver" itself; it has no place in a running registry.
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "registry.apps.PolicyAdminConfig",  # django.contrib.admin, its door decided by registry.policy
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "axes",
    "registry.apps.RegistryConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "registry.web.static_files.StaticFilesMiddleware",  # WhiteNoise, its file table found once per process
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # inside CommonMiddleware, which measures the response it rewrites; outside axes, so it sees the final page
    "registry.web.hidden_characters.HiddenCharacters",
    "axes.middleware.AxesMiddleware",  # last: turns a lock-out into the login page's message (429)
]

# Sign-in goes through django-axes first: failures are counted per account and, separately, per address, and a
# locked-out account or address is refused even with the right password until the cool-off ends. API tokens
# never pass through authenticate(), so they are not throttled here (DRF throttles them; see REST_FRAMEWORK).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("BENCHREG_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = env_int("BENCHREG_LOGIN_COOLOFF_MINUTES", 15) / 60  # hours
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one alone locks: per account and per address
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "registry.web.accounts.login_locked_out"
AXES_USERNAME_CALLABLE = "registry.web.accounts.axes_username"  # bounded to axes' varchar(255)
AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)  # never trust a client-sent X-Forwarded-For
AXES_VERBOSE = False

ROOT_URLCONF = "registry.urls"
WSGI_APPLICATION = "registry.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "registry.web.context.permissions",
            ],
        },
    },
]

# Wider than dj_database_url's DBConfig: SQLite's NAME below is a Path, which Django accepts.
DATABASES: dict[str, Any]
if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "benchreg.sqlite3",
            # IMMEDIATE takes the write lock when a transaction starts, so concurrent writers queue up
            # instead of failing with "database is locked" half-way through (audit appends rely on it).
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
    # Signed report PDFs and uploaded MLPerf archives: in the data dir by default; on an S3-compatible
    # store when BENCHREG_S3_BUCKET is set, so web servers and workers on different hosts serve the same files.
    "reports": {"BACKEND": "registry.storage.DataDirStorage", "OPTIONS": {"folder": "reports"}},
    "uploads": {"BACKEND": "registry.storage.DataDirStorage", "OPTIONS": {"folder": "uploads"}},
    # Files a run's document names in provenance.artifacts (a serving level's per-request export), uploaded after
    # the run and kept under their sha256 (registry/services/artifacts.py).
    "artifacts": {"BACKEND": "registry.storage.DataDirStorage", "OPTIONS": {"folder": "artifacts"}},
}
BENCHREG_S3_BUCKET = os.environ.get("BENCHREG_S3_BUCKET", "")
if BENCHREG_S3_BUCKET:
    from botocore.config import Config as BotoConfig

    _s3 = {
        "bucket_name": BENCHREG_S3_BUCKET,
        # an S3-compatible server (MinIO, Ceph, moto...): path-style addressing, as they expect
        "endpoint_url": os.environ.get("BENCHREG_S3_ENDPOINT_URL") or None,
        "addressing_style": "path" if os.environ.get("BENCHREG_S3_ENDPOINT_URL") else None,
        "region_name": os.environ.get("BENCHREG_S3_REGION") or None,
        # credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the host's role), read by boto3 itself
        "file_overwrite": False,
        "default_acl": None,
        "querystring_auth": True,
        "querystring_expire": 300,
        # bounded: a download answers 503 within seconds when the store is down, never hangs a worker
        "client_config": BotoConfig(
            connect_timeout=5, read_timeout=30, retries={"max_attempts": 3, "mode": "standard"}
        ),
    }
    STORAGES["reports"] = {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {**_s3, "location": "reports"}}
    STORAGES["uploads"] = {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {**_s3, "location": "uploads"}}
    STORAGES["artifacts"] = {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {**_s3, "location": "artifacts"}}
WHITENOISE_USE_FINDERS = True  # serve straight from the apps' static dirs; collectstatic is optional
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"

# The largest submission body accepted (bytes). Larger bodies get 413 before they are parsed.
MAX_SUBMISSION_BYTES = env_int("BENCHREG_MAX_SUBMISSION_BYTES", 5 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_SUBMISSION_BYTES + 1024  # any other body: 413 above it (exception_handlers)
# Arrays and objects nested in one another in a JSON body other than a submission (whose depth the protocol bounds
# at 64): deeper is 400 with a pointer, before any code that recurses meets it.
MAX_JSON_DEPTH = env_int("BENCHREG_MAX_JSON_DEPTH", 32)
# The largest artifact upload (PUT /api/v1/submissions/<id>/artifacts/<sha256>), streamed to a temporary file: 413
# above it, nothing stored. The serving runner's export of a level of 1,000,000 requests is about 2 GB.
MAX_ARTIFACT_BYTES = env_int("BENCHREG_MAX_ARTIFACT_BYTES", 512 * 1024 * 1024)
# --- a batch (POST /api/v1/submissions, application/x-ndjson): its body and its number of lines.
MAX_BATCH_BYTES = env_int("BENCHREG_MAX_BATCH_BYTES", 32 * 1024 * 1024)
MAX_BATCH_DOCUMENTS = env_int("BENCHREG_MAX_BATCH_DOCUMENTS", 2000)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "registry.api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["registry.api.permissions.ActionAllowed"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": ["registry.api.strict.StrictJSONParser"],  # JSON; NUL/lone surrogates are 422
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "registry.api.strict.StrictFormatNegotiation",  # ?format= or 406
    "DEFAULT_SCHEMA_CLASS": "registry.api.schema.ContractSchema",  # shared responses (docs/api.md)
    "EXCEPTION_HANDLER": "registry.api.exception_handlers.problem_details_handler",
    # 429 with Retry-After, as problem+json. Counts live in the default cache (per process unless CACHES says
    # otherwise). Tokens and signed-in users are counted per user, anonymous callers per address.
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
        "rest_framework.throttling.ScopedRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("BENCHREG_THROTTLE_ANON") or "120/min",
        "user": os.environ.get("BENCHREG_THROTTLE_USER") or "3000/min",
        "verify": os.environ.get("BENCHREG_THROTTLE_VERIFY") or "20/min",  # the anonymous PDF verification
        # the public audit log, its proofs and tiles: a verifier walks many tiles at once
        "audit": os.environ.get("BENCHREG_THROTTLE_AUDIT") or "1200/min",
    },
    "NUM_PROXIES": env_int("BENCHREG_NUM_PROXIES", 0),  # proxies whose X-Forwarded-For the throttles trust
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

# The anonymous report-verification endpoint parses PDFs: bodies above this are refused (413) before parsing.
BENCHREG_MAX_VERIFY_BYTES = env_int("BENCHREG_MAX_VERIFY_BYTES", 20 * 1024 * 1024)
# What verifying one report may inflate: compressed PDF streams are decoded with these caps (a Flate bomb of a few
# hundred KiB would otherwise inflate to gigabytes). A real report's largest stream, its evidence, is a few MiB.
BENCHREG_VERIFY_MAX_STREAM_BYTES = env_int("BENCHREG_VERIFY_MAX_STREAM_BYTES", 32 * 1024 * 1024)
BENCHREG_VERIFY_MAX_INFLATED_BYTES = env_int("BENCHREG_VERIFY_MAX_INFLATED_BYTES", 64 * 1024 * 1024)
# An MLPerf tree uploaded in the admin: members and unpacked bytes are counted as it is unpacked.
BENCHREG_IMPORT_MAX_UNPACKED_BYTES = env_int("BENCHREG_IMPORT_MAX_UNPACKED_BYTES", 512 * 1024 * 1024)
BENCHREG_IMPORT_MAX_MEMBERS = env_int("BENCHREG_IMPORT_MAX_MEMBERS", 20_000)

# Content-Security-Policy on every response (django-csp 4): scripts and styles from this origin only, no inline
# script anywhere (templates load static files), nothing framed, forms post here only. Inline styles stay
# allowed: the charts are matplotlib SVGs with their own <style>, and Swagger UI sets element styles.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "benchreg API",
    "DESCRIPTION": "Submit, browse and compare AI-hardware benchmark runs. Errors are RFC 9457 problem details.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

# Celery: with no broker the embedded default runs tasks in-process, so one machine needs nothing else.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
# The registry's own tasks (reports, audit sequencing, sweeps) go to this queue; agents' jobs go to their own.
# Set it when several registries (or test topologies) share one broker.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("BENCHREG_TASK_QUEUE", "celery")
CELERY_TASK_EAGER_PROPAGATES = True
# Long jobs: JSON only, one message at a time per worker, acknowledged only when finished, so a killed
# worker's job is redelivered (task code makes redelivery harmless through conditional claims).
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("BENCHREG_TASK_SOFT_TIME_LIMIT", 1800)
CELERY_TASK_TIME_LIMIT = env_int("BENCHREG_TASK_TIME_LIMIT", 1900)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- API tokens (docs/security.md, "Tokens") ----------------------------------------------------------------------
# A web process remembers a token it authenticated for this many seconds (0: never), so a client's requests do not
# each look it up (registry/api/token_cache.py). A revocation, expiry or demotion takes effect at once in the
# process that makes it and within this bound in the others.
BENCHREG_TOKEN_CACHE_S = float(os.environ.get("BENCHREG_TOKEN_CACHE_S", "2"))
if not 0 <= BENCHREG_TOKEN_CACHE_S <= 60:
    raise ImproperlyConfigured("BENCHREG_TOKEN_CACHE_S must be between 0 and 60 seconds")

# --- decisions (docs/decisions.md, "Bounds") -------------------------------------------------------------------
# Each person may own at most this many decisions (an admin included); creating one more is refused with 409.
BENCHREG_MAX_DECISIONS_PER_USER = env_int("BENCHREG_MAX_DECISIONS_PER_USER", 50)
# A stored run only marks the decisions on its workload stale; a task recomputes them after the commit. A decision
# still stale after this many seconds (its task was lost) is dispatched again by the next run stored on it.
BENCHREG_DECISION_RECOMPUTE_RETRY_S = env_int("BENCHREG_DECISION_RECOMPUTE_RETRY_S", 600)
for _name in ("BENCHREG_MAX_DECISIONS_PER_USER", "BENCHREG_DECISION_RECOMPUTE_RETRY_S"):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name} must be a positive number")

# --- outbound webhooks (docs/security.md, "Webhooks") ---------------------------------------------------------
# Deliveries go only to global addresses, checked on the address actually connected to (after resolving, so a
# name that resolves elsewhere later is caught too). An operator who needs an internal receiver lists its networks
# here (comma-separated CIDRs, e.g. "10.20.0.0/16,127.0.0.1/32"); empty by default.
BENCHREG_WEBHOOK_ALLOWED_NETWORKS = env_list("BENCHREG_WEBHOOK_ALLOWED_NETWORKS", [])
try:
    _webhook_networks = [ipaddress.ip_network(cidr, strict=False) for cidr in BENCHREG_WEBHOOK_ALLOWED_NETWORKS]
except ValueError as exc:
    raise ImproperlyConfigured(f"BENCHREG_WEBHOOK_ALLOWED_NETWORKS: {exc}") from None
# One attempt, from resolving the name to reading the answer's headers, ends after this many seconds; at most this
# many bytes of the answer are read (its body is never needed: only the status counts).
BENCHREG_WEBHOOK_DEADLINE_S = env_int("BENCHREG_WEBHOOK_DEADLINE_S", 15)
BENCHREG_WEBHOOK_MAX_RESPONSE_BYTES = env_int("BENCHREG_WEBHOOK_MAX_RESPONSE_BYTES", 16384)
BENCHREG_WEBHOOK_MAX_ATTEMPTS = env_int("BENCHREG_WEBHOOK_MAX_ATTEMPTS", 5)
# A delivery still pending after this long (no worker took it) is marked failed by the sweep and logged.
BENCHREG_WEBHOOK_GIVE_UP_AFTER_S = env_int("BENCHREG_WEBHOOK_GIVE_UP_AFTER_S", 6 * 3600)
BENCHREG_WEBHOOK_SWEEP_INTERVAL_S = env_int("BENCHREG_WEBHOOK_SWEEP_INTERVAL_S", 60)
for _name in (
    "BENCHREG_WEBHOOK_DEADLINE_S",
    "BENCHREG_WEBHOOK_MAX_RESPONSE_BYTES",
    "BENCHREG_WEBHOOK_MAX_ATTEMPTS",
    "BENCHREG_WEBHOOK_GIVE_UP_AFTER_S",
    "BENCHREG_WEBHOOK_SWEEP_INTERVAL_S",
):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name} must be a positive number")
# Deliveries have their own broker queue, so a slow receiver never holds up reports, sweeps or checkpoints. A
# worker started without --queues consumes every queue below; one started with --queues must name this one too.
BENCHREG_WEBHOOK_QUEUE = os.environ.get("BENCHREG_WEBHOOK_QUEUE", "webhooks")
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name)
    for name in dict.fromkeys([CELERY_TASK_DEFAULT_QUEUE, BENCHREG_WEBHOOK_QUEUE])
]
CELERY_TASK_ROUTES = {"registry.tasks.webhooks.*": {"queue": BENCHREG_WEBHOOK_QUEUE}}

# Audit log checkpoints (registry/audit/keys.py, docs/audit.md): signed by Celery beat every interval, and
# whenever a report is issued.
BENCHREG_LOG_ORIGIN = os.environ.get("BENCHREG_LOG_ORIGIN", "benchreg.local/audit")
BENCHREG_CHECKPOINT_KEY = os.environ.get("BENCHREG_CHECKPOINT_KEY", "")
BENCHREG_CHECKPOINT_TRUSTED_KEYS = env_list("BENCHREG_CHECKPOINT_TRUSTED_KEYS", [])
# The HMAC key committing each audit entry's actor without publishing it (a file's path; unset: generated on first
# use into <data dir>/keys/audit-commitment.key). docs/audit.md, "Who did what".
BENCHREG_AUDIT_COMMITMENT_KEY = os.environ.get("BENCHREG_AUDIT_COMMITMENT_KEY", "")
BENCHREG_CHECKPOINT_INTERVAL_S = env_int("BENCHREG_CHECKPOINT_INTERVAL_S", 300)
if BENCHREG_CHECKPOINT_INTERVAL_S <= 0:
    raise ImproperlyConfigured("BENCHREG_CHECKPOINT_INTERVAL_S must be a positive number of seconds")
# --- witnesses (docs/audit.md): "URL VKEY" pairs, comma-separated; each new checkpoint is sent to every
# witness (registry.tasks.audit.request_cosignatures) and the tlog checkpoint serves the latest one cosigned by at
# least BENCHREG_WITNESS_QUORUM of them (default: 1 when witnesses are configured).
BENCHREG_WITNESSES = env_list("BENCHREG_WITNESSES", [])
BENCHREG_WITNESS_QUORUM = env_int("BENCHREG_WITNESS_QUORUM", 1 if BENCHREG_WITNESSES else 0)
BENCHREG_WITNESS_TIMEOUT_S = env_int("BENCHREG_WITNESS_TIMEOUT_S", 10)
CELERY_BEAT_SCHEDULE = {
    "audit-checkpoint": {
        "task": "registry.tasks.audit.sign_checkpoint",
        "schedule": float(BENCHREG_CHECKPOINT_INTERVAL_S),
        # A checkpoint older than the next one is worthless: drop queued ones instead of piling them up.
        "options": {"expires": float(BENCHREG_CHECKPOINT_INTERVAL_S)},
    },
}

# --- audit entries are queued by the change's transaction and sequenced in batches (docs/audit.md).
# commit: integrated right after the change commits (by whichever committer finds no sequencer at work), plus
#         the periodic task below as a safety net; inline: numbered inside the change's transaction (writers
#         serialise; the tests' default, where nothing commits); worker: only the periodic task integrates;
#         background: a thread of the committing process integrates, so the request does not wait for it.
BENCHREG_AUDIT_SEQUENCING = os.environ.get("BENCHREG_AUDIT_SEQUENCING", "commit")
if BENCHREG_AUDIT_SEQUENCING not in ("commit", "background", "inline", "worker"):
    raise ImproperlyConfigured("BENCHREG_AUDIT_SEQUENCING must be commit, background, inline or worker")
BENCHREG_AUDIT_INTEGRATE_INTERVAL_S = float(os.environ.get("BENCHREG_AUDIT_INTEGRATE_INTERVAL_S", "1"))
CELERY_BEAT_SCHEDULE["audit-integrate"] = {
    "task": "registry.tasks.audit.integrate",
    "schedule": BENCHREG_AUDIT_INTEGRATE_INTERVAL_S,
    "options": {"expires": BENCHREG_AUDIT_INTEGRATE_INTERVAL_S},
}
# With DEBUG off, cookies are Secure (browsers still send them to http://localhost and 127.0.0.1, which
# they treat as secure contexts). A plain-HTTP LAN deployment must opt out explicitly.
SECURE_TLS = env_bool("BENCHREG_TLS", False)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = not DEBUG and not env_bool("BENCHREG_INSECURE_COOKIES", False)
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
if not DEBUG and SECURE_TLS:  # behind a TLS-terminating proxy
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"without_traceback": {"()": "registry.logfilters.WithoutTraceback"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        "console_brief": {"class": "logging.StreamHandler", "filters": ["without_traceback"]},
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    "loggers": {
        # In the embedded default kombu sees no broker URL and warns about a missing host it never uses.
        "kombu.connection": {"level": "ERROR"},
        # A request for a host the registry does not serve gets its 400 and one line, not a traceback.
        "django.security.DisallowedHost": {"handlers": ["console_brief"], "propagate": False},
    },
}

# Enrolled agents and their jobs (docs/agents.md). The broker URL agents are told at enrolment (as they reach
# it, which may differ from the server's own), when a silent agent counts as offline, and the sweep that
# times out jobs past their deadline and marks silent agents offline.
BENCHREG_AGENT_BROKER_URL = os.environ.get("BENCHREG_AGENT_BROKER_URL", CELERY_BROKER_URL)
BENCHREG_AGENT_OFFLINE_AFTER = env_int("BENCHREG_AGENT_OFFLINE_AFTER", 180)
BENCHREG_JOBS_SWEEP_INTERVAL_S = env_int("BENCHREG_JOBS_SWEEP_INTERVAL_S", 60)
CELERY_BEAT_SCHEDULE["jobs-sweep"] = {
    "task": "registry.tasks.jobs.jobs_sweep",
    "schedule": float(BENCHREG_JOBS_SWEEP_INTERVAL_S),
    "options": {"expires": float(BENCHREG_JOBS_SWEEP_INTERVAL_S)},
}

# Decision reports (registry/reports/signing.py, docs/reports.md): signed with a key generated on first use under
# <data dir>/keys unless one is supplied as PKCS#12 or PEM key + certificate chain.
BENCHREG_REPORT_PKCS12 = os.environ.get("BENCHREG_REPORT_PKCS12", "")
BENCHREG_REPORT_PKCS12_PASSWORD = os.environ.get("BENCHREG_REPORT_PKCS12_PASSWORD", "")
BENCHREG_REPORT_KEY = os.environ.get("BENCHREG_REPORT_KEY", "")
BENCHREG_REPORT_KEY_PASSWORD = os.environ.get("BENCHREG_REPORT_KEY_PASSWORD", "")
BENCHREG_REPORT_CERT = os.environ.get("BENCHREG_REPORT_CERT", "")
BENCHREG_REPORT_TRUSTED_CERTS = env_list("BENCHREG_REPORT_TRUSTED_CERTS", [])
BENCHREG_REPORT_TIMESTAMP = env_bool("BENCHREG_REPORT_TIMESTAMP", True)

# --- series: schedules, series and alerts (docs/series.md) ------------------------------------------
# Beat's tick turns due schedules into jobs; a due time not fired within BENCHREG_SCHEDULE_GRACE_S (the
# scheduler was down) is recorded as missed. Alerts go to each schedule's webhook URL, signed with that schedule's
# own secret (shown to its owner once), else to the operator's URL below, signed with the operator's secret.
BENCHREG_SCHEDULES_TICK_S = env_int("BENCHREG_SCHEDULES_TICK_S", 30)
BENCHREG_SCHEDULE_GRACE_S = env_int("BENCHREG_SCHEDULE_GRACE_S", 600)
BENCHREG_ALERT_WEBHOOK_URL = os.environ.get("BENCHREG_ALERT_WEBHOOK_URL", "")
BENCHREG_ALERT_WEBHOOK_SECRET = os.environ.get("BENCHREG_ALERT_WEBHOOK_SECRET", "")
if BENCHREG_ALERT_WEBHOOK_URL and not BENCHREG_ALERT_WEBHOOK_SECRET:
    # Alerts are only ever sent signed: refuse to start rather than record deliveries that can never be signed.
    raise ImproperlyConfigured(
        "BENCHREG_ALERT_WEBHOOK_URL is set but BENCHREG_ALERT_WEBHOOK_SECRET is not: alerts "
        "are sent signed only; set the secret (whsec_<base64>) or unset the URL"
    )
# Bounds on the work one request can cause (docs/series.md, docs/agents.md): variants in a schedule's matrix; jobs
# one plan makes (agents x precisions x batch sizes) and one due time of a schedule makes (that, x variants);
# variant firings (fired or missed) one tick of the scheduler handles before leaving the rest to the next tick.
BENCHREG_SCHEDULE_MAX_VARIANTS = env_int("BENCHREG_SCHEDULE_MAX_VARIANTS", 256)
BENCHREG_MAX_JOBS_PER_PLAN = env_int("BENCHREG_MAX_JOBS_PER_PLAN", 1000)
BENCHREG_SCHEDULE_FIRES_PER_TICK = env_int("BENCHREG_SCHEDULE_FIRES_PER_TICK", 1000)
CELERY_BEAT_SCHEDULE["webhooks-sweep"] = {
    "task": "registry.tasks.webhooks.webhooks_sweep",
    "schedule": float(BENCHREG_WEBHOOK_SWEEP_INTERVAL_S),
    "options": {"expires": float(BENCHREG_WEBHOOK_SWEEP_INTERVAL_S)},
}
CELERY_BEAT_SCHEDULE["schedules-tick"] = {
    "task": "registry.tasks.series.schedules_tick",
    "schedule": float(BENCHREG_SCHEDULES_TICK_S),
    "options": {"expires": float(BENCHREG_SCHEDULES_TICK_S)},
}

# --- operations (docs/operations.md) ------------------------------------------------------------------------
# Retry-After (seconds) on the 503 answered while the database is unreachable.
BENCHREG_RETRY_AFTER_S = env_int("BENCHREG_RETRY_AFTER_S", 5)
# Report sweep: a render older than this lost its worker (default: the task's hard limit + 1 min); claims allowed.
BENCHREG_REPORT_STALE_AFTER_S = env_int("BENCHREG_REPORT_STALE_AFTER_S", CELERY_TASK_TIME_LIMIT + 60)
BENCHREG_REPORT_MAX_ATTEMPTS = env_int("BENCHREG_REPORT_MAX_ATTEMPTS", 3)
# Reports queued or rendering at once per requester (docs/reports.md): one more is refused with 429 and
# Retry-After; a request identical to one queued, rendering or ready returns that report instead.
BENCHREG_REPORTS_PENDING_PER_PERSON = env_int("BENCHREG_REPORTS_PENDING_PER_PERSON", 3)
# The embedded default's own worker (docs/operations.md): `benchreg serve` and `benchreg demo` set this, and run
# a supervised Celery worker and beat beside gunicorn over a filesystem queue in the data dir, so reports and
# jobs never run inside a web request and no external service is needed. Without it (tests, shell, management
# commands) tasks still run in-process.
BENCHREG_EMBEDDED_WORKER = env_bool("BENCHREG_EMBEDDED_WORKER", False) and not CELERY_BROKER_URL
if BENCHREG_EMBEDDED_WORKER:
    _queue = DATA_DIR / "queue"
    for _folder in ("messages", "processed", "control", "staging", "quarantine"):
        (_queue / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    # kombu's filesystem transport with atomic writes and a consumer that quarantines unreadable files
    # (registry/worker/broker.py): kombu's own lets the worker read a half-written message and die on it.
    CELERY_BROKER_TRANSPORT = "registry.worker.broker:Transport"
    # control_folder too: kombu's default is "control" in the working directory (a stray folder in a checkout).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue / "messages"),
        "data_folder_out": str(_queue / "messages"),
        "processed_folder": str(_queue / "processed"),
        "store_processed": False,
        "control_folder": str(_queue / "control"),
        "staging_folder": str(_queue / "staging"),
        "quarantine_folder": str(_queue / "quarantine"),
    }
    CELERY_TASK_ALWAYS_EAGER = False
# Liveness of the worker and beat (registry/health.py, registry/worker/supervisor.py): each touches
# <data dir>/worker.heartbeat or beat.heartbeat at least every BENCHREG_HEARTBEAT_INTERVAL_S; one older than
# BENCHREG_HEARTBEAT_STALE_S counts as down (on the embedded default: /readyz answers 503 naming it and the
# supervisor kills and restarts it). A part that dies is restarted after 1 s, doubling on each quick death up to
# BENCHREG_SUPERVISOR_BACKOFF_MAX_S.
BENCHREG_HEARTBEAT_INTERVAL_S = env_int("BENCHREG_HEARTBEAT_INTERVAL_S", 5)
BENCHREG_HEARTBEAT_STALE_S = env_int("BENCHREG_HEARTBEAT_STALE_S", 60)
BENCHREG_SUPERVISOR_BACKOFF_MAX_S = env_int("BENCHREG_SUPERVISOR_BACKOFF_MAX_S", 60)
if not 0 < BENCHREG_HEARTBEAT_INTERVAL_S < BENCHREG_HEARTBEAT_STALE_S:
    raise ImproperlyConfigured("BENCHREG_HEARTBEAT_INTERVAL_S must be positive and below BENCHREG_HEARTBEAT_STALE_S")
if BENCHREG_SUPERVISOR_BACKOFF_MAX_S < 1:
    raise ImproperlyConfigured("BENCHREG_SUPERVISOR_BACKOFF_MAX_S must be at least 1 second")
BENCHREG_REPORTS_SWEEP_INTERVAL_S = env_int("BENCHREG_REPORTS_SWEEP_INTERVAL_S", 60)
CELERY_BEAT_SCHEDULE["reports-sweep"] = {
    "task": "registry.tasks.reports.reports_sweep",
    "schedule": float(BENCHREG_REPORTS_SWEEP_INTERVAL_S),
    "options": {"expires": float(BENCHREG_REPORTS_SWEEP_INTERVAL_S)},
}
