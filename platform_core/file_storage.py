"""Where uploaded files (knowledge-base documents) are kept, from the environment: the file system under
``MEDIA_ROOT`` by default, S3-compatible object storage (django-storages) with ``FILE_STORAGE=s3``.

Settings only: no Django models here. A half-configured object storage stops the process at start-up with
what is missing, never a first upload that fails. The secret key is read from the environment only and
never appears in a message. Objects are written without an ACL, so they are as private as the bucket
(keep it private): documents are downloaded through the platform's view, which checks who may read them,
never from the bucket's own URLs.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

FILESYSTEM = "filesystem"
S3 = "s3"
FILESYSTEM_BACKEND = "django.core.files.storage.FileSystemStorage"
S3_BACKEND = "storages.backends.s3.S3Storage"
ADDRESSING_STYLES = ("auto", "path", "virtual")
# A file read from the bucket is held in memory up to this size, then spooled to a temporary file: a
# worker parsing a large PDF does not hold all of it in memory twice.
S3_MEMORY_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class S3Settings:
    """The ``S3_*`` variables as given (``None`` when unset or empty)."""

    bucket: str | None = None
    endpoint_url: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    addressing_style: str | None = None
    prefix: str | None = None

    def named(self) -> list[str]:
        """The variables that are set, by name (never their values)."""
        return [f"S3_{field.name.upper()}" for field in fields(self) if getattr(self, field.name)]


def default_file_storage(*, kind: str | None, s3: S3Settings) -> dict[str, Any]:
    """``STORAGES["default"]`` for ``FILE_STORAGE`` (``filesystem`` or ``s3``; unset: ``s3`` when
    ``S3_BUCKET`` is set). ``ImproperlyConfigured`` says what is wrong with the variables."""
    chosen = (kind or (S3 if s3.bucket else FILESYSTEM)).strip().lower()
    if chosen == FILESYSTEM:
        if kind is None and s3.named():
            raise ImproperlyConfigured(
                f"{', '.join(s3.named())} set without S3_BUCKET: set S3_BUCKET to keep uploaded files in "
                "S3-compatible object storage, or FILE_STORAGE=filesystem to keep them under MEDIA_ROOT"
            )
        return {"BACKEND": FILESYSTEM_BACKEND}
    if chosen != S3:
        raise ImproperlyConfigured(f"FILE_STORAGE must be {FILESYSTEM} or {S3}, not {kind!r}")
    return {"BACKEND": S3_BACKEND, "OPTIONS": _s3_options(s3)}


def _s3_options(s3: S3Settings) -> dict[str, Any]:
    if not s3.bucket:
        raise ImproperlyConfigured("FILE_STORAGE=s3 needs S3_BUCKET (the bucket that keeps uploaded files)")
    if bool(s3.access_key_id) != bool(s3.secret_access_key):
        raise ImproperlyConfigured(
            "S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together: set both, or neither to use the "
            "AWS SDK's own credentials (AWS_* variables, an instance or pod role)"
        )
    if s3.endpoint_url is not None:
        parts = urlsplit(s3.endpoint_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ImproperlyConfigured("S3_ENDPOINT_URL must be an http(s) URL, e.g. https://s3.example.com")
    style = (s3.addressing_style or "auto").strip().lower()
    if style not in ADDRESSING_STYLES:
        raise ImproperlyConfigured(
            f"S3_ADDRESSING_STYLE must be one of {', '.join(ADDRESSING_STYLES)}, not {s3.addressing_style!r}"
        )
    return {
        "bucket_name": s3.bucket,
        "endpoint_url": s3.endpoint_url,
        "region_name": s3.region,
        "access_key": s3.access_key_id,
        "secret_key": s3.secret_access_key,
        "addressing_style": None if style == "auto" else style,
        "location": (s3.prefix or "").strip("/"),
        # No ACL on the objects: they are as private as the bucket (a bucket that enforces its owner
        # refuses any ACL but that one anyway).
        "default_acl": None,
        # Never served from the bucket: any URL the storage makes is signed and expires.
        "querystring_auth": True,
        # A new version of a document gets a name of its own, as on the file system: the old object is
        # deleted once the new version commits, so the two must never share a key.
        "file_overwrite": False,
        "max_memory_size": S3_MEMORY_BYTES,
        # Signature version 4, which every region and S3-compatible server takes (the SDK may pick the
        # deprecated version 2 for signed URLs on an endpoint of its own).
        "signature_version": "s3v4",
    }
