"""MySQL/MariaDB connectors over TLS, against a real MariaDB that refuses connections without TLS.

A second ``mariadbd`` (a temporary data directory, a free port, ``require_secure_transport=ON``)
serves a certificate of a throw-away CA made with ``cryptography``. The connector's ``ssl_mode``
checks certificates against the process's trust store, which the tests point at that CA with
``SSL_CERT_FILE`` (what an operator does with a private CA:
https://docs.openssl.org/3.0/man3/SSL_CTX_load_verify_locations/).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from connectors.adapter_types import DatabaseConnectorConfig, SqlActionSpec
from connectors.sql.adapter import aclose_db_pools, db_call, db_test_connection

USER, PASSWORD, DATABASE = "tls_reader", "pw-tls-5f3a9c1e", "part_d_tls"
_STARTUP_SECONDS = 30


@dataclass(frozen=True)
class TlsServer:
    port: int
    ca_file: Path
    wrong_ca_file: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _ca(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA (https://cryptography.io/en/latest/x509/tutorial/#creating-a-ca-hierarchy)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _server_cert(
    ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _write_pem(path: Path, *, cert: x509.Certificate | None = None, key: Any = None) -> Path:
    if cert is not None:
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    else:
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client(sock: Path, sql: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["mariadb", "--no-defaults", f"--socket={sock}", "-uroot", "-e", sql],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )


@pytest.fixture(scope="session")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    """A throw-away mariadbd that requires TLS, with a SELECT-only account; stopped and removed after."""
    missing = [b for b in ("mariadbd", "mariadb-install-db", "mariadb") if shutil.which(b) is None]
    if missing:
        pytest.skip(f"MariaDB binaries are not installed: {', '.join(missing)}")
    base = tmp_path_factory.mktemp("mariadb-tls")
    datadir, sock = base / "data", base / "mariadbd.sock"
    ca_key, ca_cert = _ca("part-d test CA")
    server_key, server_cert = _server_cert(ca_key, ca_cert)
    _, wrong_cert = _ca("some other CA")
    ca_file = _write_pem(base / "ca.pem", cert=ca_cert)
    wrong_ca_file = _write_pem(base / "wrong-ca.pem", cert=wrong_cert)
    cert_file = _write_pem(base / "server-cert.pem", cert=server_cert)
    key_file = _write_pem(base / "server-key.pem", key=server_key)
    user = ["--user=root"] if os.geteuid() == 0 else []
    server: subprocess.Popen[bytes] | None = None
    log_path = base / "mariadbd.log"
    try:
        subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={datadir}",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
                "--skip-name-resolve",
                *user,
            ],
            capture_output=True,
            check=True,
            timeout=120,
        )
        port = _free_port()
        with log_path.open("w") as log:
            server = subprocess.Popen(
                [
                    "mariadbd",
                    "--no-defaults",
                    f"--datadir={datadir}",
                    f"--socket={sock}",
                    f"--pid-file={base / 'mariadbd.pid'}",
                    f"--port={port}",
                    "--bind-address=127.0.0.1",
                    "--skip-name-resolve",
                    "--skip-log-bin",
                    "--innodb-buffer-pool-size=16M",
                    "--innodb-log-file-size=8M",
                    "--performance-schema=OFF",
                    f"--ssl-ca={ca_file}",
                    f"--ssl-cert={cert_file}",
                    f"--ssl-key={key_file}",
                    "--require-secure-transport=ON",
                    *user,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + _STARTUP_SECONDS
        while _client(sock, "SELECT 1").returncode != 0:
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the TLS mariadbd did not start: {log_path.read_text()[-2000:]}")
            time.sleep(0.1)
        setup = _client(
            sock,
            f"CREATE DATABASE {DATABASE}; CREATE TABLE {DATABASE}.items (id INT PRIMARY KEY, name TEXT);"
            f" INSERT INTO {DATABASE}.items VALUES (1, 'bolt'), (2, 'nut');"
            f" CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}';"
            f" GRANT SELECT ON {DATABASE}.* TO '{USER}'@'%';",
        )
        assert setup.returncode == 0, setup.stderr
        yield TlsServer(port=port, ca_file=ca_file, wrong_ca_file=wrong_ca_file)
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
async def _close_pools() -> AsyncIterator[None]:
    yield
    await aclose_db_pools()


def config(server: TlsServer, ssl_mode: str) -> DatabaseConnectorConfig:
    query = f"?ssl_mode={ssl_mode}" if ssl_mode else ""
    return DatabaseConnectorConfig(
        connector_id=f"tls-{uuid.uuid4()}",
        dsn=f"mysql://{USER}:{PASSWORD}@127.0.0.1:{server.port}/{DATABASE}{query}",
        engine="mariadb",
        allowed_private_hosts=("127.0.0.1",),
        pool_max_size=1,
        connect_timeout=5,
    )


QUERY = SqlActionSpec(name="items", sql_template="SELECT name FROM items ORDER BY id")


@pytest.mark.parametrize("ssl_mode", ["verify_ca", "verify_identity"])
async def test_a_connector_that_verifies_the_servers_ca_connects_and_reads(
    tls_server: TlsServer, monkeypatch: pytest.MonkeyPatch, ssl_mode: str
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_server.ca_file))
    settings = config(tls_server, ssl_mode)

    tested = await db_test_connection(settings)
    read = await db_call(settings, QUERY, {})

    assert tested.status == "ok", tested.error
    assert tested.content.startswith("connected: MariaDB 10.")
    assert read.status == "ok" and "bolt" in read.content and "nut" in read.content


async def test_without_tls_the_server_refuses_the_connector(tls_server: TlsServer) -> None:
    settings = config(tls_server, "")

    tested = await db_test_connection(settings)
    read = await db_call(settings, QUERY, {})

    for outcome in (tested, read):
        assert outcome.status == "error"
        assert "could not connect to the database" in outcome.error
        # MariaDB says "access denied" to an account that would log in with TLS; the error says what to try.
        assert "Access denied" in outcome.error
        assert "if the server requires TLS, add ?ssl_mode=verify_identity to the DSN" in outcome.error
        assert PASSWORD not in outcome.error


async def test_a_certificate_of_another_ca_fails_with_a_clear_error(
    tls_server: TlsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_server.wrong_ca_file))
    settings = config(tls_server, "verify_ca")

    tested = await db_test_connection(settings)
    read = await db_call(settings, QUERY, {})

    for outcome in (tested, read):
        assert outcome.status == "error"
        assert "could not connect to the database" in outcome.error
        assert outcome.error.startswith(
            "could not connect to the database: TLS failed (ssl_mode=verify_ca): the server's certificate"
            " could not be verified: "
        )
        assert "certificate" in outcome.error.rsplit(":", 1)[1]  # OpenSSL's reason, e.g. "self-signed ..."
        assert "bolt" not in outcome.content


async def test_required_tls_encrypts_without_checking_the_certificate(tls_server: TlsServer) -> None:
    read = await db_call(config(tls_server, "required"), QUERY, {})

    assert read.status == "ok" and "bolt" in read.content
