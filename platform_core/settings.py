"""Django settings: every value comes from the environment through ``platform_core.env``.

With no environment at all the platform runs on embedded defaults (SQLite, the in-memory channel layer,
a file-system Celery broker, the offline demo model). ``DATABASE_URL`` and ``REDIS_URL`` switch the same
code to PostgreSQL, the Redis channel layer and a Redis broker; ``DJANGO_ENV=production`` turns off every
generated default and enables the deployment security settings.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import dj_database_url
from django.utils.translation import gettext_lazy as _

from platform_core.env import (
    BASE_DIR,
    env_bool,
    env_int,
    env_list,
    env_str,
    is_production,
    local_secret,
)
from platform_core.file_storage import S3Settings, default_file_storage

PRODUCTION = is_production()
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)

SECRET_KEY = local_secret("SECRET_KEY")
FIELD_ENCRYPTION_KEYS = [k.strip() for k in local_secret("FIELD_ENCRYPTION_KEYS").split(",") if k.strip()]
# Off unless asked for, in development too: `make run` shows what users see (the styled error pages,
# never Django's technical ones). DJANGO_DEBUG=true turns Django's debug pages on for development.
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", [] if PRODUCTION else ["127.0.0.1", "localhost", "[::1]", "testserver"]
)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served by the platform (no CDN)
    "channels",
    "csp",  # Content-Security-Policy (django-csp): its system checks
    "platform_core",
    "connectors",  # connectors app (issue 4)
    "agents",
    "hooks",  # guard rails and approvals (issue 6)
    "platform_core.wiring",  # the project wiring: the serve and serve_prod commands
    # --- single sign-on (issue 20): django-allauth with its Feishu and OpenID Connect providers ---
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.feishu",
    "allauth.socialaccount.providers.openid_connect",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "platform_core.tenancy.time_zone.OrganizationTimeZoneMiddleware",  # times in the organisation's zone
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",  # single sign-on (issue 20)
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "platform_core.wiring.urls"
ASGI_APPLICATION = "platform_core.wiring.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "platform_core.wiring.navigation.topbar",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}"
_db = dj_database_url.parse(DATABASE_URL)
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and immediate transactions let daphne and the Celery worker share the file without
    # "database is locked" errors under ordinary load.
    _db["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests get a file of their own process rather than SQLite's shared-cache memory database, whose
    # table locks fail a second writing thread at once instead of letting it wait its turn (a run's event
    # writer and a request thread write at the same moment).
    _db["TEST"] = {"NAME": os.path.join(tempfile.gettempdir(), f"agent-platform-test-{os.getpid()}.sqlite3")}
elif _db["ENGINE"] == "django.db.backends.postgresql":
    # psycopg 3 with Django's own pool; pooled connections replace persistent ones.
    _db["CONN_MAX_AGE"] = 0
    _db["OPTIONS"] = {"pool": {"min_size": 1, "max_size": env_int("DATABASE_POOL_MAX", 10), "timeout": 10}}
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis, channel layer, cache ------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    # production (issue 8): the Redis Pub/Sub layer. channels-redis's list-based RedisChannelLayer lets
    # one process receive on a single kind of process-local channel at a time: a consumer's channel
    # ("specific.…!") starves while the run manager ("runs.…") or an approval gate ("approval.…") blocks
    # on its own (channels_redis PR #165), so live events stopped reaching sockets of a server that runs
    # a run. Pub/Sub gives every channel its own queue and pushes instead of polling. It drops messages
    # during a Redis outage, which the platform absorbs: events are persisted and sockets fill seq gaps
    # from the database, approval gates re-check the database, clients resume. The subclass only gives each
    # channel a lighter inbox (about 3 KiB less per open socket).
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "platform_core.wiring.channel_layer.LeanRedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Celery ---------------------------------------------------------------------------------------
# The filesystem broker's folder (embedded default): var/celery unless CELERY_FILESYSTEM_FOLDER says.
_celery_dir = Path(env_str("CELERY_FILESYSTEM_FOLDER") or VAR_DIR / "celery")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or REDIS_URL or "filesystem://"
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL == "filesystem://":
    for sub in ("queue", "processed", "control"):
        (_celery_dir / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_celery_dir / "queue"),
        "data_folder_out": str(_celery_dir / "queue"),
        "processed_folder": str(_celery_dir / "processed"),
        # The exchange tables (worker broadcasts), else kombu writes them to ./control of the working directory.
        "control_folder": str(_celery_dir / "control"),
        "store_processed": False,
    }
else:
    # Longer than any task: a task is never redelivered while it still runs.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or (REDIS_URL if REDIS_URL else None)
CELERY_TASK_IGNORE_RESULT = CELERY_RESULT_BACKEND is None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {}
# --- guard rails and approvals (issue 6): expire overdue approval requests and update their cards ---
CELERY_BEAT_SCHEDULE["expire-overdue-approvals"] = {
    "task": "hooks.tasks.expire_overdue_approvals",
    "schedule": 30.0,
}
# --- end guard rails ---
CELERY_TIMEZONE = "UTC"

# --- LLM defaults (an org's own model configs override these) ----------------------------------------
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
LLM_MODEL = env_str("LLM_MODEL")
LLM_TOOL_CALL = env_bool("LLM_TOOL_CALL", True)
LLM_JSON_MODE = env_bool("LLM_JSON_MODE", True)
LLM_CONTEXT_WINDOW = env_int("LLM_CONTEXT_WINDOW", 128000)

FEISHU_BASE_URL = env_str("FEISHU_BASE_URL", "https://open.feishu.cn")

# --- Outbound SSRF allowances (issue 14): hosts org admins may use for model endpoints / Feishu although
# they resolve to private or loopback addresses (a local vLLM or Ollama, a Feishu gateway inside the
# network). Operator-only: comma-separated host names or IPs, matched exactly; empty by default. The hosts
# of OPENAI_BASE_URL and FEISHU_BASE_URL are the operator's own and always allowed for those defaults.
MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS = env_list("MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS")
FEISHU_ALLOWED_PRIVATE_HOSTS = env_list("FEISHU_ALLOWED_PRIVATE_HOSTS")

# --- MCP connectors over stdio (issue 18): the local commands an org admin may name as an MCP server
# (the first element of the connector's command, matched exactly, e.g. "/usr/local/bin/mcp-server-time").
# Operator-only, comma-separated, empty by default: without it no stdio MCP server runs.
MCP_STDIO_ALLOWED_COMMANDS = env_list("MCP_STDIO_ALLOWED_COMMANDS")

# --- Auth -----------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- single sign-on (issue 20): django-allauth, https://docs.allauth.org/en/latest/ ---------------------
# Feishu (or Lark) sign-in with a Feishu app of the deployment (FEISHU_SSO_APP_ID/SECRET; its origin
# FEISHU_SSO_BASE_URL, default FEISHU_BASE_URL) and OpenID Connect providers (OIDC_PROVIDERS, a JSON
# list of {"id", "name", "server_url", "client_id", "secret"}). Which Feishu tenants and e-mail domains
# join which organisation is each organisation's sign-in rules (admin). Provider HTTP goes through the
# SSRF guard; SSO_ALLOWED_PRIVATE_HOSTS allows private hosts besides the configured ones.
from platform_core.sso.providers import parse_oidc_providers, socialaccount_providers  # noqa: E402

AUTHENTICATION_BACKENDS = ["platform_core.sso.backends.PasswordPolicyBackend"]
FEISHU_SSO_BASE_URL = env_str("FEISHU_SSO_BASE_URL") or FEISHU_BASE_URL
SOCIALACCOUNT_PROVIDERS = socialaccount_providers(
    feishu_app_id=env_str("FEISHU_SSO_APP_ID"),
    feishu_secret=env_str("FEISHU_SSO_APP_SECRET"),
    feishu_base_url=FEISHU_SSO_BASE_URL,
    oidc=parse_oidc_providers(env_str("OIDC_PROVIDERS")),
)
SSO_ALLOWED_PRIVATE_HOSTS = env_list("SSO_ALLOWED_PRIVATE_HOSTS")
ACCOUNT_ADAPTER = "platform_core.sso.adapter.PlatformAccountAdapter"
SOCIALACCOUNT_ADAPTER = "platform_core.wiring.sso_http.GuardedSocialAccountAdapter"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "password1*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_UNIQUE_EMAIL = False  # local accounts predate SSO; sign-in rules decide who an address is
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # existing accounts are matched by the sign-in rules only
SOCIALACCOUNT_STORE_TOKENS = False  # provider tokens are used once and never stored
SOCIALACCOUNT_LOGIN_ON_GET = False  # the provider buttons POST (CSRF-protected)
SOCIALACCOUNT_REQUESTS_TIMEOUT = 10

# --- REST API -------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "platform_core.identity.api_keys.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Bounded before a parser or a query sees them (platform_core/api/pagination.py and parsers.py): pages of
    # at most 500 rows, JSON and form bodies of at most API_MAX_JSON_BYTES, JSON nested at most 100 deep.
    "DEFAULT_PARSER_CLASSES": [
        "platform_core.api.parsers.BoundedJSONParser",
        "platform_core.api.parsers.BoundedFormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "platform_core.api.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "EXCEPTION_HANDLER": "platform_core.api_errors.api_exception_handler",
}
# The largest JSON or form body the REST API reads (413 above it); 10 MiB leaves room for an OpenAPI document.
API_MAX_JSON_BYTES = env_int("API_MAX_JSON_BYTES", 10 * 1024 * 1024)
SPECTACULAR_SETTINGS = {
    "TITLE": "Agent platform API",
    "DESCRIPTION": "Organisations, connectors, agents, conversations, approvals and audit logs.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/schema/swagger-ui/ loads Swagger UI from the platform's static files, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Two choice sets share the field name "role": a member's role, and the roles a sign-in rule may give.
    "ENUM_NAME_OVERRIDES": {
        "MemberRoleEnum": "platform_core.models.Role",
        "SignInRoleEnum": "platform_core.models.SSO_ROLES",
        # An attachment's kind, in the attachments' own answers and in a message's.
        "AttachmentKindEnum": "agents.attachments.models.AttachmentKind",
        # Who wrote a memory: an agent or the person (issue 36).
        "MemoryOriginEnum": "agents.memory.models.MemoryOrigin",
    },
}
# --- The documentation site: `make docs` builds it into <DOCS_DIR>/en and <DOCS_DIR>/zh, served at /docs/ ---
DOCS_ROOT = Path(env_str("DOCS_DIR") or VAR_DIR / "docs")

# --- Internationalisation -------------------------------------------------------------------------
LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
# The project's catalogues, then Chinese for Django's own admin strings that Django's zh_Hans catalogues
# lack (the filter_horizontal selectors' captions and buttons among them; maintained by hand).
LOCALE_PATHS = [BASE_DIR / "locale", BASE_DIR / "platform_core" / "upstream_locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files ---------------------------------------------------------------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
WHITENOISE_USE_FINDERS = not PRODUCTION
# Uploaded files (knowledge-base documents): var/media unless MEDIA_ROOT says, or S3-compatible object
# storage (FILE_STORAGE=s3 or S3_BUCKET: platform_core.file_storage); never served as static files nor
# from the bucket (a document is downloaded through a view that checks who may read it).
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or VAR_DIR / "media")
STORAGES = {
    "default": default_file_storage(
        kind=env_str("FILE_STORAGE"),
        s3=S3Settings(
            bucket=env_str("S3_BUCKET"),
            endpoint_url=env_str("S3_ENDPOINT_URL"),
            region=env_str("S3_REGION"),
            access_key_id=env_str("S3_ACCESS_KEY_ID"),
            secret_access_key=env_str("S3_SECRET_ACCESS_KEY"),
            addressing_style=env_str("S3_ADDRESSING_STYLE"),
            prefix=env_str("S3_PREFIX"),
        ),
    ),
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# --- Websockets -----------------------------------------------------------------------------------
# Origins allowed to open a websocket; ALLOWED_HOSTS when unset (Channels' AllowedHostsOriginValidator).
WEBSOCKET_ALLOWED_ORIGINS = env_list("WEBSOCKET_ALLOWED_ORIGINS")

# --- Security (production) ------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# A strict Content-Security-Policy on every response, in development as in production: scripts and styles
# only from this origin's files (no inline code, no eval), the websocket through 'self' (CSP3 matches ws:
# and wss: of the same host), no plugins, no framing, forms post only here. CSP_REPORT_URI, when set,
# is where browsers report what the policy blocked.
_csp_report_uri = env_str("CSP_REPORT_URI")  # not a CSP_* setting: django-csp 4 rejects those
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
        **({"report-uri": [_csp_report_uri]} if _csp_report_uri else {}),
    }
}
if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    if env_bool("TRUST_X_FORWARDED_PROTO", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Mail -----------------------------------------------------------------------------------------
# With EMAIL_HOST set, mail goes out through that SMTP server (production). Without it nothing could be
# sent, so the embedded default writes every message as a file into EMAIL_FILE_PATH (var/mail/) and the
# pages say so (issue 32). EMAIL_BACKEND overrides both (e.g. the console backend while developing).
EMAIL_HOST = env_str("EMAIL_HOST", "") or ""
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "") or ""
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "") or ""
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "webmaster@localhost")
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH", str(VAR_DIR / "mail"))
EMAIL_BACKEND = env_str("EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.filebased.EmailBackend"
)

# --- Logging --------------------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    # Beat's ticks and the receipt and success of its routine tasks say nothing at INFO (those tasks log
    # what they change), so `make run` keeps the seeded admin's once-only password on screen.
    "filters": {"quiet_routine_tasks": {"()": "platform_core.log_filters.QuietRoutineTasks"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        # The HTTP clients log every request at INFO ("HTTP Request: POST ..."): one line per model call
        # and per connector call, about 8 % of the model client's CPU at 200 conversations. Calls are in
        # the audit log and the usage records; their errors still log.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "celery.beat": {"filters": ["quiet_routine_tasks"]},
        "celery.worker.strategy": {"filters": ["quiet_routine_tasks"]},
        "celery.app.trace": {"filters": ["quiet_routine_tasks"]},
    },
}
TRUST_X_FORWARDED_FOR = env_bool("TRUST_X_FORWARDED_FOR", False)
# Wrong API keys per client address and window before the address is refused (429) until the window
# ends (platform_core.identity.api_keys.throttle; 0 turns it off).
API_KEY_FAILURES_PER_ADDRESS = env_int("API_KEY_FAILURES_PER_ADDRESS", 20)
API_KEY_FAILURE_WINDOW_SECONDS = env_int("API_KEY_FAILURE_WINDOW_SECONDS", 600)

# --- Agents and runs ------------------------------------------------------------------------------
AGENT_MAX_MESSAGE_CHARS = env_int("AGENT_MAX_MESSAGE_CHARS", 20000)
AGENT_MAX_CONCURRENT_RUNS_PER_USER = env_int("AGENT_MAX_CONCURRENT_RUNS_PER_USER", 3)
# A streamed answer's pieces are sent at most once per window per run (0: each piece at once).
ANSWER_DELTA_WINDOW_MS = env_int("ANSWER_DELTA_WINDOW_MS", 0)
# On SQLite each process keeps knowledge bases' passage vectors in memory for vector search, up to this
# many MiB (least recently searched dropped first; agents/knowledge/vector_index.py). 100,000 passages of
# 1,024 dimensions take 400 MiB.
KNOWLEDGE_VECTOR_CACHE_MB = env_int("KNOWLEDGE_VECTOR_CACHE_MB", 1024)

# --- production (issue 8): multi-process tunables ------------------------------------------------------
# A waiting approval gate wakes on the Redis channel layer the moment any process records a decision; this
# database re-check only covers a lost wake-up. Several server processes re-checking every waiting gate
# cost queries, so deployments may lengthen it (the multi-process tests raise it to prove the wake-up).
APPROVAL_RECHECK_SECONDS = float(env_str("APPROVAL_RECHECK_SECONDS", "2") or 2)
# A stream open with an API key (HTTP events, OpenAI-compatible, MCP) closes the moment the key's
# revocation is announced on the channel layer, and at its expiry; this re-read of the key only covers
# a revocation the announcement cannot reach (a lost message, a bulk update).
API_KEY_RECHECK_SECONDS = float(env_str("API_KEY_RECHECK_SECONDS", "10") or 10)
# --- end production ---

# --- durable runs (issue 8): leases, the sweeper, parked approvals -------------------------------------
# A running run is held by its process through a lease valid RUN_LEASE_SECONDS, renewed with its event
# writes and every RUN_LEASE_RENEW_SECONDS; the sweeper (beat, every RUN_SWEEP_SECONDS) marks runs whose
# lease lapsed "interrupted" (so within lease + sweep seconds of a crash) and they can be resumed.
RUN_LEASE_SECONDS = float(env_str("RUN_LEASE_SECONDS", "15") or 15)
RUN_LEASE_RENEW_SECONDS = float(env_str("RUN_LEASE_RENEW_SECONDS", "5") or 5)
RUN_SWEEP_SECONDS = float(env_str("RUN_SWEEP_SECONDS", "10") or 10)
# A run waits this long for an approval in its process; then it is parked and a Celery worker resumes
# it on the decision. Without Redis (one process, development) a worker could not stream the resumed
# run to the browser, so runs wait in process for their approval's whole time unless this is set.
_hold = env_str("APPROVAL_INPROCESS_HOLD_SECONDS")
APPROVAL_INPROCESS_HOLD_SECONDS: float | None = float(_hold) if _hold else (120.0 if REDIS_URL else None)
CELERY_BEAT_SCHEDULE["sweep-runs"] = {"task": "agents.tasks.sweep_runs", "schedule": RUN_SWEEP_SECONDS}
# --- end durable runs ---

# --- knowledge bases (issue 34): ingestion's bounds and its sweeper ---------------------------------
# A document over these is refused with its reason (agents.knowledge.failures), never half-read.
KNOWLEDGE_MAX_FILE_BYTES = env_int("KNOWLEDGE_MAX_FILE_BYTES", 50 * 1024 * 1024)
KNOWLEDGE_MAX_UNPACKED_BYTES = env_int("KNOWLEDGE_MAX_UNPACKED_BYTES", 200 * 1024 * 1024)
KNOWLEDGE_MAX_PAGES = env_int("KNOWLEDGE_MAX_PAGES", 2000)
# A document whose ingestion made no progress for this long (its worker died, its task was lost) is
# queued again by the sweeper, up to KNOWLEDGE_MAX_ATTEMPTS times; then it fails with that reason.
KNOWLEDGE_STALE_SECONDS = env_int("KNOWLEDGE_STALE_SECONDS", 600)
KNOWLEDGE_MAX_ATTEMPTS = env_int("KNOWLEDGE_MAX_ATTEMPTS", 3)
CELERY_BEAT_SCHEDULE["sweep-knowledge-documents"] = {
    "task": "agents.knowledge.tasks.sweep_documents",
    "schedule": 60.0,
}
# --- end knowledge bases ---

# --- chat attachments (issue 35): limits, quota and retention (docs/operations/attachments.md) -------------
# One file over ATTACHMENT_MAX_FILE_BYTES is refused (and not kept while the request is read); the files
# sent with one message may take ATTACHMENT_MAX_MESSAGE_BYTES together; an organisation's attachments
# ATTACHMENT_ORG_QUOTA_BYTES in all (0: no quota). A DOCX, XLSX or PPTX may unpack to
# ATTACHMENT_MAX_UNPACKED_BYTES; a picture may have ATTACHMENT_MAX_IMAGE_PIXELS pixels (a bigger one is a
# decompression bomb, refused before anything decodes it).
ATTACHMENT_MAX_FILE_BYTES = env_int("ATTACHMENT_MAX_FILE_BYTES", 20 * 1024 * 1024)
ATTACHMENT_MAX_MESSAGE_BYTES = env_int("ATTACHMENT_MAX_MESSAGE_BYTES", 50 * 1024 * 1024)
ATTACHMENT_ORG_QUOTA_BYTES = env_int("ATTACHMENT_ORG_QUOTA_BYTES", 10 * 1024 * 1024 * 1024)
ATTACHMENT_MAX_UNPACKED_BYTES = env_int("ATTACHMENT_MAX_UNPACKED_BYTES", 200 * 1024 * 1024)
ATTACHMENT_MAX_IMAGE_PIXELS = env_int("ATTACHMENT_MAX_IMAGE_PIXELS", 8192 * 8192)
# An upload never sent with a message is deleted after this many hours.
ATTACHMENT_PENDING_HOURS = env_int("ATTACHMENT_PENDING_HOURS", 24)
# A new organisation's retention of attachments, in days (its admins change it; 0 or unset: kept until
# their conversation is deleted).
ATTACHMENT_RETENTION_DAYS = env_int("ATTACHMENT_RETENTION_DAYS", 0) or None
CELERY_BEAT_SCHEDULE["sweep-attachments"] = {
    "task": "agents.attachments.tasks.sweep_attachments",
    "schedule": float(env_int("ATTACHMENT_SWEEP_SECONDS", 900)),
}
# --- end chat attachments ---

# --- memory (issue 36): the sweeper deleting memories past their organisation's retention ----------------
CELERY_BEAT_SCHEDULE["sweep-memories"] = {
    "task": "agents.memory.tasks.sweep_memories",
    "schedule": float(env_int("MEMORY_SWEEP_SECONDS", 3600)),
}
# --- end memory ---

# Where the demo organisation's "erp" connector reaches the built-in demo API (``make run`` sets it to
# the address it serves on).
DEMO_API_BASE_URL = env_str("DEMO_API_BASE_URL")
# A PostgreSQL or MariaDB/MySQL server where seed_demo creates a small purchasing schema and a read-only
# "purchasing" database connector (``make prod`` sets it to the local PostgreSQL); unset: none.
DEMO_DATABASE_URL = env_str("DEMO_DATABASE_URL")
