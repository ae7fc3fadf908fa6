"""MySQL and MariaDB DSNs: parsed, checked by the SSRF guard and pinned to the checked address.

A DSN is a URL, ``mysql://user:password@host:3306/database?ssl_mode=verify_identity`` (``mariadb://``
works too). The driver connects to the address the SSRF guard checked, never to a name it would
resolve again; with ``ssl_mode=verify_identity`` the server's certificate is still verified against
the host *name* of the DSN. ``ssl_mode`` follows the MySQL client's option of the same name
(https://dev.mysql.com/doc/refman/8.0/en/connection-options.html#option_general_ssl-mode):
``disabled`` (the default), ``required`` (encrypted, certificate not checked), ``verify_ca`` and
``verify_identity``; certificates are checked against the system's trust store.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from connectors.sql.dsn_errors import DsnError
from connectors.ssrf import resolve_and_check

MYSQL_SCHEMES = ("mysql", "mariadb")
SSL_MODES = ("disabled", "required", "verify_ca", "verify_identity")
_PARAMS = {"ssl_mode", "charset"}


@dataclass(frozen=True, slots=True)
class MySqlDsn:
    """The parts of a MySQL DSN the adapter uses (``password`` is a secret)."""

    host: str
    port: int
    user: str
    password: str = field(repr=False)
    database: str
    ssl_mode: str = "disabled"
    charset: str = "utf8mb4"


def is_mysql_dsn(dsn: str) -> bool:
    """Whether ``dsn`` is a ``mysql://`` or ``mariadb://`` URL."""
    return dsn.strip().lower().startswith(tuple(f"{s}://" for s in MYSQL_SCHEMES))


def parse_mysql_dsn(dsn: str) -> MySqlDsn:
    """The DSN's parts, or DsnError (whose message never contains the DSN)."""
    try:
        parts = urlsplit(dsn.strip())
        port = parts.port or 3306
    except ValueError as exc:
        raise DsnError("the DSN could not be parsed") from exc
    if parts.scheme.lower() not in MYSQL_SCHEMES:
        raise DsnError("a MySQL DSN starts with mysql:// or mariadb://")
    host = parts.hostname or ""
    if not host:
        raise DsnError("the DSN must name a host")
    if host.startswith("/"):
        raise DsnError("unix-socket hosts are not supported; use a TCP host name or address")
    database = unquote(parts.path.lstrip("/"))
    if not database or "/" in database:
        raise DsnError("the DSN must name one database (mysql://user:password@host:3306/database)")
    options: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        name = key.strip().lower().replace("-", "_")
        if name not in _PARAMS:
            raise DsnError(f"the DSN parameter {key[:40]!r} is not supported (only ssl_mode and charset)")
        options[name] = value.strip().lower()
    ssl_mode = options.get("ssl_mode") or "disabled"
    if ssl_mode not in SSL_MODES:
        raise DsnError(f"ssl_mode must be one of {', '.join(SSL_MODES)}")
    charset = options.get("charset") or "utf8mb4"
    if not charset.isalnum():
        raise DsnError("the DSN's charset is not a character set name")
    return MySqlDsn(
        host=host,
        port=port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        database=database,
        ssl_mode=ssl_mode,
        charset=charset,
    )


class _PinnedNameContext(ssl.SSLContext):
    """Verifies the certificate for the DSN's host name while the socket goes to the pinned address."""

    verify_name: str = ""

    def wrap_bio(
        self,
        incoming: Any,
        outgoing: Any,
        server_side: bool = False,
        server_hostname: Any = None,
        session: Any = None,
    ) -> Any:
        return super().wrap_bio(
            incoming, outgoing, server_side=server_side, server_hostname=self.verify_name, session=session
        )


def tls_context(dsn: MySqlDsn) -> ssl.SSLContext | None:
    """The TLS context ``ssl_mode`` asks for (``None`` when TLS is disabled)."""
    if dsn.ssl_mode == "disabled":
        return None
    context = _PinnedNameContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_name = dsn.host
    if dsn.ssl_mode == "required":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.load_default_certs()
        context.check_hostname = dsn.ssl_mode == "verify_identity"
        context.verify_mode = ssl.CERT_REQUIRED
    return context


@dataclass(frozen=True, slots=True)
class PinnedMySql:
    """Where and how to connect: the SSRF-checked address and the DSN's parts."""

    address: str
    dsn: MySqlDsn


async def pinned_mysql(dsn: str, *, allowed_private_hosts: Sequence[str]) -> PinnedMySql:
    """The DSN's host resolved and checked by the SSRF guard (raises SSRFBlocked, DsnError...)."""
    parsed = parse_mysql_dsn(dsn)
    addresses = await resolve_and_check(parsed.host, parsed.port, allowed_private_hosts=allowed_private_hosts)
    return PinnedMySql(address=addresses[0], dsn=parsed)
