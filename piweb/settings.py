"""Django settings for piweb, read from the environment (see README "Configuration")."""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from accounts_app.oidc_config import ConfigError, read_config  # settings load before any app: no facade here
from core.proxies import parse_trusted_proxies
from piweb import config, workers

BASE_DIR = Path(__file__).resolve().parent.parent
ENV = os.environ

# Development is the default so a fresh checkout runs; production sets DJANGO_DEBUG=0.
DEBUG = config.env_flag(ENV, "DJANGO_DEBUG", default=True)

SECRET_KEY = ENV.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off.")
    SECRET_KEY = "dev-only-insecure-key-never-use-in-production-piweb-0123456789"

ALLOWED_HOSTS = config.env_list(ENV, "DJANGO_ALLOWED_HOSTS")
if not ALLOWED_HOSTS and DEBUG:
    ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]", "testserver"]
CSRF_TRUSTED_ORIGINS = config.env_list(ENV, "DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "providers.apps.ProvidersConfig",
    "actionlog.apps.ActionlogConfig",
    "teams.apps.TeamsConfig",
    "sessions_app.apps.SessionsAppConfig",
    "sync.apps.SyncConfig",
    "live.apps.LiveConfig",
    "provenance.apps.ProvenanceConfig",
    "compaction_app.apps.CompactionAppConfig",
    "agent.apps.AgentConfig",
    "runners.apps.RunnersConfig",
    "audit.apps.AuditConfig",
    "governance.apps.GovernanceConfig",
    # Sign-in with the team's identity provider (OpenID Connect); inert while PIWEB_OIDC_ISSUER is unset.
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "accounts_app.apps.AccountsAppConfig",
    "costs.apps.CostsConfig",
    "discussion.apps.DiscussionConfig",
    # After costs: its receiver of stored entries reads the day totals costs stored for the same batch.
    "activity.apps.ActivityConfig",
    "organize.apps.OrganizeConfig",
    "reviews.apps.ReviewsConfig",
    "hooks.apps.HooksConfig",
]
# daphne's app only makes ``manage.py runserver`` serve ASGI (websockets included); loaded for that command
# alone, since it brings Twisted (about 16 MB) into every worker, import and command that has no use for it.
if sys.argv[1:2] == ["runserver"]:
    INSTALLED_APPS.insert(0, "daphne")

MIDDLEWARE = [
    # Outermost: a request that met a database outage anywhere below answers 503 with Retry-After.
    "piweb.outages.DatabaseOutageMiddleware",
    # First: the client address everything after it sees (throttles) is the one trusted proxies vouch for.
    "core.proxies.ClientAddressMiddleware",
    # Outside the rest: every answer, refusals included, carries the Content-Security-Policy.
    "piweb.csp.ContentSecurityPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Before anything reads the body or the session: oversized bodies and unusable query values stop here.
    "piweb.limits.RequestLimitsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Django's session, user and messages middleware, left out by API requests carrying only a token.
    "piweb.token_requests.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "piweb.token_requests.AuthenticationMiddleware",
    "piweb.token_requests.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# Prometheus metrics at /metrics (README "Operations"); counted by the first middleware.
PIWEB_METRICS = config.env_flag(ENV, "PIWEB_METRICS", default=False)
# Set, /metrics answers only a scraper sending "Authorization: Bearer <token>" (401 otherwise).
PIWEB_METRICS_TOKEN = ENV.get("PIWEB_METRICS_TOKEN", "").strip()
if PIWEB_METRICS:
    MIDDLEWARE.insert(0, "core.metrics.MetricsMiddleware")

ROOT_URLCONF = "piweb.urls"
WSGI_APPLICATION = "piweb.wsgi.application"
ASGI_APPLICATION = "piweb.asgi.application"

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
                "discussion.context_processors.inbox",
                "piweb.context_processors.release",
            ],
        },
    },
]

for _folder in config.local_folders(ENV, base_dir=BASE_DIR):
    _folder.mkdir(parents=True, exist_ok=True)

DATABASES = {"default": config.database_config(ENV, base_dir=BASE_DIR)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CHANNEL_LAYERS = config.channel_layers_config(ENV, base_dir=BASE_DIR)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
# The identity provider (README "Sign in with your identity provider"); None when PIWEB_OIDC_ISSUER is unset.
try:
    OIDC_SIGN_IN = read_config(ENV)
except ConfigError as error:
    raise ImproperlyConfigured(str(error)) from None
# Password sign-in (the login form and POST /api/token/ with a password); 0 leaves only the provider.
PIWEB_PASSWORD_LOGIN = config.env_flag(ENV, "PIWEB_PASSWORD_LOGIN", default=True)
ACCOUNT_ADAPTER = "accounts_app.adapter.AccountAdapter"
SOCIALACCOUNT_ADAPTER = "accounts_app.adapter.SocialAccountAdapter"
SOCIALACCOUNT_PROVIDERS = {
    "openid_connect": {
        "provider_class": "accounts_app.oidc.SignInProvider",
        "OAUTH_PKCE_ENABLED": True,
        # An existing account is linked only when the provider says its email address is verified.
        "EMAIL_AUTHENTICATION": True,
        "APPS": []
        if OIDC_SIGN_IN is None
        else [
            {
                "provider_id": "sso",
                "name": OIDC_SIGN_IN.name,
                "client_id": OIDC_SIGN_IN.client_id,
                "secret": OIDC_SIGN_IN.client_secret,
                "settings": {"server_url": OIDC_SIGN_IN.issuer, "fetch_userinfo": True},
            }
        ],
    }
}
SOCIALACCOUNT_EMAIL_AUTHENTICATION = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION_AUTO_CONNECT = True
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_LOGIN_ON_GET = False
# piweb sends no mail: the provider vouches for addresses, and accounts without one are fine.
ACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_SIGNUP_FIELDS = ["email", "username*"]
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# `make run` collects the static files before it serves (PIWEB_STATIC_COLLECTED=1): its pages then name
# hashed files that the browser keeps, as in production, even with DEBUG on; otherwise every page load
# asks again for each of its modules. A development server without it serves the source files as edited.
STATIC_COLLECTED = not DEBUG or config.env_flag(ENV, "PIWEB_STATIC_COLLECTED", default=False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        # Hashed names need collectstatic first; development serves files straight from the finders.
        # The modules' relative imports are rewritten to the hashed names too.
        "BACKEND": "piweb.static_storage.ModuleManifestStaticFilesStorage"
        if STATIC_COLLECTED
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not STATIC_COLLECTED
# Pick up new files without a restart in development; also avoids scanning a missing STATIC_ROOT.
WHITENOISE_AUTOREFRESH = not STATIC_COLLECTED

# Request bodies are capped small everywhere; only the import endpoint takes a session file, which is
# spooled to disk past FILE_UPLOAD_MAX_MEMORY_SIZE rather than held in memory.
PIWEB_MAX_BODY_BYTES = int(ENV.get("PIWEB_MAX_BODY_BYTES", str(8 * config.MIB)))
PIWEB_MAX_IMPORT_BYTES = int(ENV.get("PIWEB_MAX_IMPORT_BYTES", str(256 * config.MIB)))
# Import quotas, answered with 413 and the numbers: entries in one file, and the bytes of all a user's
# stored lines (0: no limit).
PIWEB_MAX_IMPORT_ENTRIES = int(ENV.get("PIWEB_MAX_IMPORT_ENTRIES", "2000000"))
# Pictures attached to a prompt: each one's decoded size, and how many one prompt may carry. Their
# base64 travels in the request body, so PIWEB_MAX_BODY_BYTES bounds them all together as well.
PIWEB_MAX_IMAGE_BYTES = int(ENV.get("PIWEB_MAX_IMAGE_BYTES", str(4 * config.MIB)))
PIWEB_MAX_IMAGES = int(ENV.get("PIWEB_MAX_IMAGES", "4"))
PIWEB_MAX_STORED_BYTES_PER_USER = int(ENV.get("PIWEB_MAX_STORED_BYTES_PER_USER", "0"))
# A body must arrive within this many seconds of its headers (plus one per MiB declared), or 408.
PIWEB_BODY_TIMEOUT = float(ENV.get("PIWEB_BODY_TIMEOUT", "30"))
DATA_UPLOAD_MAX_MEMORY_SIZE = PIWEB_MAX_BODY_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 4 * config.MIB

# Endpoints that spend model tokens (runs, compactions, branch summaries) share one per-user budget.
PIWEB_LLM_RATE = ENV.get("PIWEB_LLM_RATE", "30/min")
PIWEB_CELERY_EAGER = config.env_flag(ENV, "PIWEB_CELERY_EAGER", default=False)
PIWEB_LOG_LEVEL = ENV.get("PIWEB_LOG_LEVEL", "INFO")
# Presence (who has a session open): each tab beats every HEARTBEAT seconds and is gone TTL seconds
# after its last beat; kept in Redis when REDIS_URL is set (every process sees every tab), else in memory.
PIWEB_PRESENCE_HEARTBEAT = float(ENV.get("PIWEB_PRESENCE_HEARTBEAT", "4"))
PIWEB_PRESENCE_TTL = float(ENV.get("PIWEB_PRESENCE_TTL", "10"))
PRESENCE_REDIS_URL = ENV.get("REDIS_URL", "").strip()
# A Pi writing a session live (the Pi package) beats every WRITER_HEARTBEAT seconds through the sync API
# and is shown as "live from Pi" until WRITER_TTL seconds after its last beat or line.
PIWEB_WRITER_HEARTBEAT = float(ENV.get("PIWEB_WRITER_HEARTBEAT", "15"))
PIWEB_WRITER_TTL = float(ENV.get("PIWEB_WRITER_TTL", "40"))
# The biggest session (its JSONL export) a dispatch sends to a runner in one message.
# Seconds a runner that lost its socket has to come back before its runs are ended as failed.
PIWEB_RUNNER_GRACE = float(ENV.get("PIWEB_RUNNER_GRACE", "60"))
# The longest line a runner may send (Pi's lines are one entry each; a tool's output is the usual giant).
PIWEB_RUNNER_MAX_LINE_BYTES = int(ENV.get("PIWEB_RUNNER_MAX_LINE_BYTES", str(16 * 1024 * 1024)))
PIWEB_RUNNER_MAX_SESSION_BYTES = int(ENV.get("PIWEB_RUNNER_MAX_SESSION_BYTES", str(8 * 1024 * 1024)))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "accounts_app.authentication.ApiTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Size-limited JSON that refuses deep nesting without recursing (orjson).
    "DEFAULT_PARSER_CLASSES": ["core.api.parsers.LimitedJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    # One error shape everywhere: {"error": <message>, "detail": ...}.
    "EXCEPTION_HANDLER": "core.api.errors.api_exception_handler",
    "DEFAULT_THROTTLE_RATES": {"llm": PIWEB_LLM_RATE},
    # REMOTE_ADDR is already the client (core.proxies, PIWEB_TRUSTED_PROXIES): never read X-Forwarded-For.
    "NUM_PROXIES": 0,
}
# API tokens (django-rest-knox): stored as SHA-512 hashes, one per device, each expiring and revocable.
KNOX_TOKEN_MODEL = "sessions_app.ApiToken"
# Knox's own migrations create its default token table even when the model is swapped; ours replaces it.
MIGRATION_MODULES = {"knox": None}
PIWEB_API_TOKEN_TTL_DAYS = int(ENV.get("PIWEB_API_TOKEN_TTL_DAYS", "90"))
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=PIWEB_API_TOKEN_TTL_DAYS) if PIWEB_API_TOKEN_TTL_DAYS > 0 else None,
    "AUTH_HEADER_PREFIX": "Bearer",
}
# Failed sign-ins (login page and POST /api/token/) allowed per client address and per username;
# past either, 429 with the seconds to wait.
PIWEB_LOGIN_RATE_PER_CLIENT = ENV.get("PIWEB_LOGIN_RATE_PER_CLIENT", "20/min")
PIWEB_LOGIN_RATE_PER_USERNAME = ENV.get("PIWEB_LOGIN_RATE_PER_USERNAME", "10/min")
# The proxies whose X-Forwarded-For is believed: empty (none), a count of hops, or addresses and CIDRs.
PIWEB_TRUSTED_PROXIES = ENV.get("PIWEB_TRUSTED_PROXIES", "")
parse_trusted_proxies(PIWEB_TRUSTED_PROXIES)  # a bad value stops the server at start, naming it
# Provider API keys are encrypted at rest with these Fernet keys (comma-separated, the first encrypts);
# unset, a key derived from SECRET_KEY is used (check --deploy warns).
PIWEB_SECRETS_KEY = ENV.get("PIWEB_SECRETS_KEY", "")
# Throttle counts must be shared by every web process: Redis when there is one.
CACHES = config.cache_config(ENV)

SPECTACULAR_SETTINGS = {
    "TITLE": "piweb API",
    "DESCRIPTION": "Store, browse, branch and compact Pi coding-agent session trees.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Separate request components, so uploads are declared as binary files rather than URIs.
    "COMPONENT_SPLIT_REQUEST": True,
    # Serve the documentation UI from our own static files, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A share's access and a team's default share are one choice set: one name in the schema.
    "ENUM_NAME_OVERRIDES": {"AccessEnum": "sessions_app.models.SessionShare.Access"},
}

CELERY_BROKER_URL = config.celery_broker(ENV)
CELERY_BROKER_TRANSPORT = config.celery_broker_transport(ENV)
CELERY_BROKER_TRANSPORT_OPTIONS = config.celery_broker_transport_options(ENV, base_dir=BASE_DIR)
CELERY_RESULT_BACKEND = config.celery_result_backend(ENV, base_dir=BASE_DIR)
CELERY_TASK_ACKS_LATE = True
# Nothing reads a task's return value (runs, compactions and scans write their outcome to their own rows):
# storing it cost a Redis write per task and, in the web process that queued it, a subscription to its
# result channel.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A task type this worker does not know (an older worker in a rolling upgrade) goes back to its queue
# for one that knows it, instead of being dropped (piweb.consumer).
CELERY_WORKER_CONSUMER = "piweb.consumer:Consumer"
CELERY_TASK_ALWAYS_EAGER = PIWEB_CELERY_EAGER
CELERY_TASK_EAGER_PROPAGATES = CELERY_TASK_ALWAYS_EAGER
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A cold shutdown (SIGQUIT, what `make run` sends on Ctrl-C) gives running tasks this long to finish, then
# hands them back to the broker; a warm shutdown (SIGTERM) still waits for them however long they take.
CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT = 1.0
# Runs wait on model providers and go to a thread-pool worker; compactions and summaries have their own
# queue and process pool, so they never wait behind runs (piweb/workers.py starts both workers).
# Housekeeping (purging deleted sessions) takes the default queue, which the operations worker also serves.
CELERY_TASK_ROUTES = {
    "agent.run_agent": {"queue": workers.runs_queue(ENV)},
    "compaction_app.tasks.*": {"queue": workers.operations_queue(ENV)},
    "sessions.*": {"queue": workers.DEFAULT_QUEUE},
    "governance.*": {"queue": workers.DEFAULT_QUEUE},
    # Webhook deliveries wait on other servers: never behind runs.
    "hooks.*": {"queue": workers.DEFAULT_QUEUE},
}
# Workers beat in Redis while they consume (piweb.worker_heartbeat); /readyz fails when a queue has had no
# live worker for PIWEB_WORKER_STALE_SECONDS. On wherever workers are needed: a Redis broker, tasks not eager.
PIWEB_WORKER_STALE_SECONDS = float(ENV.get("PIWEB_WORKER_STALE_SECONDS", "30"))
PIWEB_READY_WORKERS = config.env_flag(
    ENV, "PIWEB_READY_WORKERS", default=CELERY_BROKER_URL.startswith("redis") and not PIWEB_CELERY_EAGER
)

# Governance (README "Secrets, retention and link views"): sessions untouched this many days are deleted
# (unset: kept forever; teams and users may set their own), by a daily beat task.
PIWEB_RETENTION_DAYS = config.env_days(ENV, "PIWEB_RETENTION_DAYS")
PIWEB_RETENTION_AT = ENV.get("PIWEB_RETENTION_AT", "03:17")  # the daily run, UTC (HH:MM)
PIWEB_RETENTION_EVERY_SECONDS = float(ENV.get("PIWEB_RETENTION_EVERY_SECONDS", "0") or 0)
# Outgoing webhooks (docs/features.md, "Webhooks"): each attempt's timeout, the retry backoff (first
# wait, doubling to the longest, given up that long after the event), the sweep of lost tasks, and
# whether hooks may send to loopback and private addresses (off: a hook cannot probe the server's network).
PIWEB_HOOKS_TIMEOUT_SECONDS = float(ENV.get("PIWEB_HOOKS_TIMEOUT_SECONDS", "5"))
PIWEB_HOOKS_BACKOFF_FIRST_SECONDS = float(ENV.get("PIWEB_HOOKS_BACKOFF_FIRST_SECONDS", "30"))
PIWEB_HOOKS_BACKOFF_MAX_SECONDS = float(ENV.get("PIWEB_HOOKS_BACKOFF_MAX_SECONDS", "3600"))
PIWEB_HOOKS_GIVE_UP_SECONDS = float(ENV.get("PIWEB_HOOKS_GIVE_UP_SECONDS", str(24 * 3600)))
PIWEB_HOOKS_SWEEP_SECONDS = float(ENV.get("PIWEB_HOOKS_SWEEP_SECONDS", "60"))
PIWEB_HOOKS_SWEEP_GRACE_SECONDS = float(ENV.get("PIWEB_HOOKS_SWEEP_GRACE_SECONDS", "60"))
PIWEB_HOOKS_ALLOW_PRIVATE = config.env_flag(ENV, "PIWEB_HOOKS_ALLOW_PRIVATE", default=False)
# Any number of beats may run (every worker group starts one): they elect the one that sends through a
# Redis lease of this many seconds, taken over that long after its holder dies (piweb.beat).
CELERY_BEAT_SCHEDULER = "piweb.beat:ElectedScheduler"
PIWEB_BEAT_LOCK_SECONDS = float(ENV.get("PIWEB_BEAT_LOCK_SECONDS", "30") or 30)
from celery.schedules import crontab  # noqa: E402  # beside the schedule that alone uses it

CELERY_BEAT_SCHEDULE = {
    "governance-retention": {
        "task": "governance.apply_retention",
        # A time of day survives restarts (an interval would start over at each); tests use seconds.
        "schedule": timedelta(seconds=PIWEB_RETENTION_EVERY_SECONDS)
        if PIWEB_RETENTION_EVERY_SECONDS > 0
        else config.daily_at(PIWEB_RETENTION_AT, "PIWEB_RETENTION_AT"),
    },
    # Notification emails whose task was lost or fell due while a batch was waiting.
    "discussion-email-sweep": {"task": "discussion.send_due_emails", "schedule": timedelta(minutes=1)},
    # Compactions and branch summaries queued or running past PIWEB_OPERATION_TIMEOUT: nothing will end them.
    "compaction-expire-stale": {
        "task": "compaction_app.tasks.expire_stale_operations",
        "schedule": timedelta(minutes=5),
    },
    # Webhook deliveries overdue past their grace: their task was lost (broker away, worker killed).
    "hooks-sweep": {"task": "hooks.sweep_due", "schedule": timedelta(seconds=PIWEB_HOOKS_SWEEP_SECONDS)},
    # Bulk secret scans whose task was lost (the broker away when an import committed).
    "governance-scan-sweep": {"task": "governance.sweep_pending_scans", "schedule": timedelta(hours=1)},
    # Each team's digest of the week that just ended, on Monday morning (UTC); a rerun sends nothing twice.
    "activity-weekly-digest": {
        "task": "activity.send_digests",
        "schedule": crontab(minute=0, hour=6, day_of_week="mon"),
    },
}

if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = config.env_flag(ENV, "DJANGO_SECURE_SSL_REDIRECT", default=True)
    # An orchestrator probes the process itself, over plain HTTP: a redirect to HTTPS would fail it.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    SECURE_HSTS_SECONDS = int(ENV.get("DJANGO_HSTS_SECONDS", str(60 * 60 * 24 * 365)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    if config.env_flag(ENV, "DJANGO_BEHIND_TLS_PROXY", default=False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Every handler redacts secrets (share-link, API and reset tokens) from what it writes; the access log is
# piweb's own (piweb.edge: client per PIWEB_TRUSTED_PROXIES, redacted path), the servers' own is off.
PIWEB_ACCESS_LOG = config.env_flag(ENV, "PIWEB_ACCESS_LOG", default=True)
# PIWEB_LOG_FORMAT=json: one JSON object per line with the request id (piweb.json_logs), redacted first.
PIWEB_LOG_FORMAT = ENV.get("PIWEB_LOG_FORMAT", "plain").strip().lower() or "plain"
if PIWEB_LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"PIWEB_LOG_FORMAT must be plain or json, not {PIWEB_LOG_FORMAT!r}")
_JSON_LOGS = PIWEB_LOG_FORMAT == "json"
# Celery workers keep the same handlers (its own root logger would write plain text).
CELERY_WORKER_HIJACK_ROOT_LOGGER = not _JSON_LOGS
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact": {"()": "piweb.log_redaction.RedactSecretsFilter"},
        "request_id": {"()": "piweb.json_logs.RequestIdFilter"},
    },
    "formatters": {
        "plain": {"format": "{asctime} {levelname} {name}: {message}", "style": "{"},
        "access": {"format": "{asctime} {message}", "style": "{"},
        "json": {"()": "piweb.json_logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if _JSON_LOGS else "plain",
            "filters": ["redact", "request_id"],
        },
        "access": {
            "class": "logging.StreamHandler",
            "formatter": "json" if _JSON_LOGS else "access",
            "filters": ["redact", "request_id"],
        },
    },
    "root": {"handlers": ["console"], "level": PIWEB_LOG_LEVEL},
    "loggers": {
        "django": {"handlers": ["console"], "level": ENV.get("DJANGO_LOG_LEVEL", "INFO"), "propagate": False},
        # Never at DEBUG, whatever DJANGO_LOG_LEVEL says: a template's debug record dumps the page's whole
        # context (tokens, addresses), and a query's carries its parameters (what people wrote, searched).
        "django.template": {"level": "INFO"},
        "django.db.backends": {"level": "INFO"},
        "piweb.access": {
            "handlers": ["access"],
            "level": "INFO" if PIWEB_ACCESS_LOG else "CRITICAL",
            "propagate": False,
        },
    },
}

# piweb's own settings: every one read from the environment here, with its one default (README table).
# Compaction (Pi reads these from its settings.json): the tokens kept free for the answer, the recent
# tokens kept verbatim, and an optional JSON block in Pi's shape ({"enabled", "modelOverrides", ...}).
PIWEB_COMPACTION_RESERVE_TOKENS = int(ENV.get("PIWEB_COMPACTION_RESERVE_TOKENS", "16384"))
PIWEB_COMPACTION_KEEP_RECENT_TOKENS = int(ENV.get("PIWEB_COMPACTION_KEEP_RECENT_TOKENS", "20000"))
PIWEB_COMPACTION = config.env_json(ENV, "PIWEB_COMPACTION")
# An optional summarizer factory (dotted path, called with the session) and queue for LLM-bound tasks.
PIWEB_SUMMARIZER = ENV.get("PIWEB_SUMMARIZER") or None
PIWEB_COMPACTION_QUEUE = ENV.get("PIWEB_COMPACTION_QUEUE") or None
# A compaction or branch summary queued or running this long is given up (failed), freeing its session.
PIWEB_OPERATION_TIMEOUT = float(ENV.get("PIWEB_OPERATION_TIMEOUT", "900"))
# Agent runs: Pi's retry block as JSON ({"enabled", "maxRetries", "baseDelayMs"}) and the model timeout.
PIWEB_AGENT_RETRY = config.env_json(ENV, "PIWEB_AGENT_RETRY")
# Who writes the summaries of compactions inside runs: the run's own model (Pi's way), or "default":
# the same summarizer as compactions outside runs.
PIWEB_RUN_SUMMARIZER = ENV.get("PIWEB_RUN_SUMMARIZER", "run")
PIWEB_LLM_TIMEOUT = float(ENV.get("PIWEB_LLM_TIMEOUT", "120"))
# The context window assumed for the context meter when the request names none (API and page alike).
PIWEB_DEFAULT_CONTEXT_WINDOW = int(ENV.get("PIWEB_DEFAULT_CONTEXT_WINDOW", "200000"))

# The covering index that makes path reads index-only is a PostgreSQL feature; SQLite just ignores the
# included column, which is fine for the embedded default.
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    SILENCED_SYSTEM_CHECKS = ["models.W040"]

# Notification emails (discussion), through Django's mailers over SMTP (localhost:25 unless EMAIL_HOST
# says otherwise, as Django's own default). An unreachable server costs the email, never the comment.
# The environment keeps the familiar EMAIL_* names (README, Configuration).
_SMTP_OPTIONS = {
    "host": ENV.get("EMAIL_HOST", "localhost"),
    "port": int(ENV.get("EMAIL_PORT", "25")),
    "username": ENV.get("EMAIL_HOST_USER", ""),
    "password": ENV.get("EMAIL_HOST_PASSWORD", ""),
    "use_tls": config.env_flag(ENV, "EMAIL_USE_TLS", default=False),
    "use_ssl": config.env_flag(ENV, "EMAIL_USE_SSL", default=False),
    "timeout": float(ENV.get("EMAIL_TIMEOUT", "10")),
}
MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend", "OPTIONS": _SMTP_OPTIONS}}
DEFAULT_FROM_EMAIL = ENV.get("DEFAULT_FROM_EMAIL", "piweb <piweb@localhost>")
# One person's comments (posts and edits) per window: 40 mentions in 5 s must not become 40 emails.
PIWEB_COMMENT_RATE = ENV.get("PIWEB_COMMENT_RATE", "12/min")
# A recipient gets at most one notification email per this many seconds; what arrives meanwhile is batched.
PIWEB_MAIL_BATCH_SECONDS = int(ENV.get("PIWEB_MAIL_BATCH_SECONDS", "120"))
# The address people open piweb at, for links in emails.
PIWEB_BASE_URL = ENV.get("PIWEB_BASE_URL", "http://localhost:8000")
