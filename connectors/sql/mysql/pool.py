"""Connection pools of MySQL/MariaDB connectors: one per connector and event loop.

Each connection goes to the SSRF-checked address of the connector's DSN (:mod:`connectors.sql.mysql.dsn`),
with multi-statement queries switched off on the server side (asyncmy asks for them when it
connects; ``COM_SET_OPTION`` turns them off for the session), so a second statement is a syntax
error whatever the SQL guard said. A connection given back is reset with ``COM_RESET_CONNECTION``
(user variables, session settings, temporary tables, prepared statements and ``GET_LOCK`` locks
are gone) before anyone reuses it, and an idle connection is pinged when taken, so one the server
dropped (``KILL``, ``wait_timeout``, a restart) is replaced by a new connection instead of failing
the call.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import struct

import asyncmy
from asyncmy.errors import Error as MySqlError

from connectors.adapter_types import DatabaseConnectorConfig
from connectors.sql.mysql.dsn import PinnedMySql, pinned_mysql, tls_context
from connectors.sql.pool_registry import PoolRegistry

logger = logging.getLogger(__name__)

# https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_set_option.html
_COM_SET_OPTION = 0x1B
_MULTI_STATEMENTS_OFF = 1
# https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_reset_connection.html
_COM_RESET_CONNECTION = 0x1F
# MariaDB answers a connection without TLS that require_secure_transport refuses with "access denied"
# (1045); MySQL with ER_SECURE_TRANSPORT_REQUIRED (3159).
_MAYBE_TLS_REQUIRED_CODES = frozenset({1045, 3159})


class MySqlConnectFailed(Exception):
    """Connecting to the server failed (the message is the server's or the network's, no DSN)."""


def mysql_message(exc: BaseException) -> str:
    """The server's one-line message of a driver error (at most 300 characters)."""
    args = exc.args
    text = str(args[1]) if len(args) > 1 else str(exc)
    return " ".join(text.split())[:300]


def mysql_code(exc: BaseException) -> int | None:
    """The MySQL error number of a driver error, if it has one."""
    args = exc.args
    return args[0] if args and isinstance(args[0], int) else None


async def _command(conn: asyncmy.Connection, command: int, payload: bytes) -> None:
    await conn._execute_command(command, payload)  # type: ignore[attr-defined]  # private, not in asyncmy's stub
    await conn.read_packet()  # an OK (or EOF) packet; an ERR packet raises


async def _prepare_session(conn: asyncmy.Connection) -> None:
    await _command(conn, _COM_SET_OPTION, struct.pack("<H", _MULTI_STATEMENTS_OFF))


async def connect_mysql(pinned: PinnedMySql, config: DatabaseConnectorConfig) -> asyncmy.Connection:
    """A new connection to the pinned address, multi-statements off, autocommit on."""
    dsn = pinned.dsn
    try:
        conn = await asyncmy.connect(
            host=pinned.address,
            port=dsn.port,
            user=dsn.user,
            password=dsn.password,
            database=dsn.database,
            charset=dsn.charset,
            connect_timeout=max(1, round(config.connect_timeout)),
            ssl=tls_context(dsn),
            autocommit=True,
            local_infile=False,
        )
    except (MySqlError, OSError, TimeoutError) as exc:
        tls = _tls_error(exc)
        message = mysql_message(exc) or type(exc).__name__
        if isinstance(tls, ssl.SSLCertVerificationError):
            message = (
                f"TLS failed (ssl_mode={dsn.ssl_mode}): the server's certificate could not be verified:"
                f" {tls.verify_message}"
            )
        elif tls is not None:
            message = f"TLS failed (ssl_mode={dsn.ssl_mode}): {tls.reason or message}"
        elif dsn.ssl_mode == "disabled" and mysql_code(exc) in _MAYBE_TLS_REQUIRED_CODES:
            message += "; if the server requires TLS, add ?ssl_mode=verify_identity to the DSN"
        raise MySqlConnectFailed(message) from None
    try:
        await _prepare_session(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _tls_error(exc: BaseException) -> ssl.SSLError | None:
    """The TLS error behind a connection error (asyncmy wraps it in its own), if any."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class MySqlPool:
    """At most ``max_size`` connections of one connector; idle ones are reused after a reset."""

    def __init__(self, pinned: PinnedMySql, config: DatabaseConnectorConfig) -> None:
        self._pinned = pinned
        self._config = config
        self._idle: list[asyncmy.Connection] = []
        self._slots = asyncio.Semaphore(max(1, config.pool_max_size))
        self.connections_made = 0

    async def acquire(self) -> asyncmy.Connection:
        """An idle connection that answers a ping, or a new one."""
        await self._slots.acquire()
        try:
            while self._idle:
                conn = self._idle.pop()
                try:
                    await conn.ping(reconnect=False)
                    return conn
                except (MySqlError, OSError, RuntimeError):
                    conn.close()  # the server dropped it; try the next or connect anew
            conn = await connect_mysql(self._pinned, self._config)
            self.connections_made += 1
            return conn
        except BaseException:
            self._slots.release()
            raise

    async def release(self, conn: asyncmy.Connection, *, reusable: bool) -> None:
        """Give ``conn`` back: reset for the next call, or closed when it cannot be trusted."""
        try:
            if reusable and conn.connected:
                try:
                    await _command(conn, _COM_RESET_CONNECTION, b"")
                    await _prepare_session(conn)
                    self._idle.append(conn)
                    return
                except (MySqlError, OSError, RuntimeError):
                    pass
            conn.close()
        finally:
            self._slots.release()

    def close(self) -> None:
        """Close the idle connections (those in use are closed when given back)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


async def _new_pool(config: DatabaseConnectorConfig) -> MySqlPool:
    pinned = await pinned_mysql(config.dsn, allowed_private_hosts=config.allowed_private_hosts)
    return MySqlPool(pinned, config)


async def _close_pool(pool: MySqlPool) -> None:
    pool.close()


_registry: PoolRegistry[MySqlPool] = PoolRegistry(_new_pool, _close_pool)


async def mysql_pool_for(config: DatabaseConnectorConfig) -> MySqlPool:
    """The connector's pool in this loop; (re)created when its DSN or limits change."""
    return await _registry.pool_for(config)


async def aclose_mysql_pools() -> None:
    """Close the MySQL pools of the running event loop (call on shutdown and in tests)."""
    await _registry.aclose()
