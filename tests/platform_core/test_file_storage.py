"""Where uploaded files are kept, from the environment: the file system unless object storage is asked
for; S3-compatible storage from ``FILE_STORAGE=s3`` and the ``S3_*`` variables, private and never
overwriting; a half-configured object storage stops the process at start-up, naming what is missing and
never the secret."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from platform_core.file_storage import FILESYSTEM_BACKEND, S3_BACKEND, S3Settings, default_file_storage
from tests.platform_core.fresh_process import ROOT, printed_after_setup

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
DROPPED = ("DJANGO_", "FILE_STORAGE", "S3_", "MEDIA_ROOT")


def test_without_any_variable_files_stay_on_the_file_system():
    assert default_file_storage(kind=None, s3=S3Settings()) == {"BACKEND": FILESYSTEM_BACKEND}


def test_a_bucket_alone_chooses_object_storage_with_private_objects_that_are_never_overwritten():
    storage = default_file_storage(kind=None, s3=S3Settings(bucket="documents", prefix="/platform/files/"))

    assert storage["BACKEND"] == S3_BACKEND
    options = storage["OPTIONS"]
    assert options["bucket_name"] == "documents" and options["location"] == "platform/files"
    assert options["default_acl"] is None and options["querystring_auth"] is True
    assert options["file_overwrite"] is False
    # No keys given: the AWS SDK's own credentials (AWS_* variables, an instance role) apply.
    assert options["access_key"] is None and options["secret_key"] is None
    assert options["addressing_style"] is None and options["endpoint_url"] is None


def test_an_s3_compatible_server_takes_its_endpoint_keys_region_and_addressing_style():
    options = default_file_storage(
        kind="S3",
        s3=S3Settings(
            bucket="documents",
            endpoint_url="https://minio.internal:9000",
            region="cn-north-1",
            access_key_id="platform",
            secret_access_key=SECRET,
            addressing_style="Path",
        ),
    )["OPTIONS"]

    assert options["endpoint_url"] == "https://minio.internal:9000" and options["region_name"] == "cn-north-1"
    assert options["access_key"] == "platform" and options["secret_key"] == SECRET
    assert options["addressing_style"] == "path" and options["location"] == ""


def test_file_system_asked_for_by_name_ignores_the_s3_variables():
    kept = default_file_storage(kind="filesystem", s3=S3Settings(bucket="documents", endpoint_url="http://x"))
    assert kept == {"BACKEND": FILESYSTEM_BACKEND}


@pytest.mark.parametrize(
    ("kind", "s3", "message"),
    [
        (None, S3Settings(endpoint_url="https://s3.example.com"), "S3_ENDPOINT_URL set without S3_BUCKET"),
        (
            None,
            S3Settings(access_key_id="platform", secret_access_key=SECRET),
            "S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY set without S3_BUCKET",
        ),
        ("s3", S3Settings(endpoint_url="https://s3.example.com"), "FILE_STORAGE=s3 needs S3_BUCKET"),
        ("s3", S3Settings(bucket="documents", secret_access_key=SECRET), "go together"),
        ("s3", S3Settings(bucket="documents", access_key_id="platform"), "go together"),
        ("s3", S3Settings(bucket="documents", endpoint_url="s3.example.com"), "must be an http(s) URL"),
        ("s3", S3Settings(bucket="documents", addressing_style="dns"), "S3_ADDRESSING_STYLE must be"),
        ("gcs", S3Settings(bucket="documents"), "FILE_STORAGE must be filesystem or s3, not 'gcs'"),
    ],
)
def test_a_half_configured_object_storage_is_refused_with_what_is_missing(kind, s3, message):
    with pytest.raises(ImproperlyConfigured) as refused:
        default_file_storage(kind=kind, s3=s3)

    assert message in str(refused.value)
    assert SECRET not in str(refused.value)


def test_the_settings_read_the_variables_into_an_s3_default_storage():
    printed = printed_after_setup(
        "from django.core.files.storage import storages; d = storages['default'];"
        "print(type(d).__name__, d.bucket_name, d.location, d.endpoint_url, d.addressing_style, d.file_overwrite)",
        {
            "FILE_STORAGE": "s3",
            "S3_BUCKET": "documents",
            "S3_ENDPOINT_URL": "http://127.0.0.1:9",
            "S3_ACCESS_KEY_ID": "platform",
            "S3_SECRET_ACCESS_KEY": SECRET,
            "S3_ADDRESSING_STYLE": "path",
            "S3_PREFIX": "agents",
        },
        dropped=DROPPED,
    )
    assert printed == "S3Storage documents agents http://127.0.0.1:9 path False"


def test_the_default_is_still_the_file_system_under_media_root():
    printed = printed_after_setup(
        "from django.core.files.storage import storages; from django.conf import settings as s;"
        "d = storages['default']; print(type(d).__name__, d.location == str(s.MEDIA_ROOT))",
        {},
        dropped=DROPPED,
    )
    assert printed == "FileSystemStorage True"


def test_a_process_with_a_half_configured_object_storage_does_not_start():
    base = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
    env = {**base, "DJANGO_SETTINGS_MODULE": "platform_core.settings"}
    env |= {"S3_ENDPOINT_URL": "https://s3.example.com", "S3_SECRET_ACCESS_KEY": SECRET}

    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode != 0
    assert "S3_ENDPOINT_URL, S3_SECRET_ACCESS_KEY set without S3_BUCKET" in done.stderr
    assert SECRET not in done.stderr
