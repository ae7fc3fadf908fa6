"""Connection pools of database connectors: one per connector and event loop.

Each pool connects to the SSRF-checked, pinned address of the connector's DSN
(:mod:`connectors.sql.postgres.dsn`), runs ``DISCARD ALL`` before a connection is reused, and is rebuilt
when the connector's DSN or limits change (:mod:`connectors.sql.pool_registry`). psycopg's pool
retries failed connections in the background and only tells a waiting caller that it timed out;
:func:`acquire` remembers why the attempt failed and gives up at once with that reason.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from connectors.adapter_types import DatabaseConnectorConfig
from connectors.sql.pool_registry import PoolRegistry, pool_fingerprint
from connectors.sql.postgres.dsn import pinned_conninfo

__all__ = ["ConnectFailed", "acquire", "aclose_pools", "db_message", "pool_fingerprint", "pool_for"]


def db_message(exc: psycopg.Error) -> str:
    """The server's one-line message for ``exc`` (no DSN, at most 300 characters)."""
    primary = getattr(getattr(exc, "diag", None), "message_primary", None) or str(exc)
    return " ".join(primary.split())[:300]


# conninfo hash -> (when, why) the pool's last connection attempt failed
_connect_errors: dict[str, tuple[float, str]] = {}
_POLL_SECONDS = 0.2


class ConnectFailed(Exception):
    """A connection attempt made while this call waited for a connection failed."""


def _conninfo_key(conninfo: str) -> str:
    return hashlib.sha256(conninfo.encode()).hexdigest()


class _PoolConnection(psycopg.AsyncConnection):
    """Remembers why connecting failed: the pool itself only reports a timeout to the waiting call."""

    @classmethod
    async def connect(cls, conninfo: str = "", **kwargs: Any) -> _PoolConnection:
        try:
            conn = await super().connect(conninfo, **kwargs)
        except psycopg.OperationalError as exc:
            _connect_errors[_conninfo_key(conninfo)] = (time.monotonic(), db_message(exc))
            raise
        _connect_errors.pop(_conninfo_key(conninfo), None)
        return conn


async def _reset_session(conn: psycopg.AsyncConnection) -> None:
    await conn.execute("DISCARD ALL")


async def _new_pool(config: DatabaseConnectorConfig) -> AsyncConnectionPool:
    conninfo = await pinned_conninfo(
        config.dsn,
        allowed_private_hosts=config.allowed_private_hosts,
        connect_timeout=config.connect_timeout,
    )
    pool: AsyncConnectionPool = AsyncConnectionPool(
        conninfo,
        connection_class=_PoolConnection,
        kwargs={"autocommit": True, "prepare_threshold": None},
        min_size=0,
        max_size=max(1, config.pool_max_size),
        open=False,
        reset=_reset_session,
        name=f"connector-{config.connector_id}",
        max_idle=300,
        # Nobody waits long for a failed connection, and the next call tries again anyway.
        reconnect_timeout=max(10.0, 3 * config.connect_timeout),
    )
    await pool.open()
    return pool


async def _close_pool(pool: AsyncConnectionPool) -> None:
    await pool.close()


_registry: PoolRegistry[AsyncConnectionPool] = PoolRegistry(_new_pool, _close_pool)


async def pool_for(config: DatabaseConnectorConfig) -> AsyncConnectionPool:
    """The connector's pool in this loop; (re)created when its DSN or limits change."""
    return await _registry.pool_for(config)


async def aclose_pools() -> None:
    """Close the connection pools of the running event loop (call on shutdown and in tests)."""
    await _registry.aclose()


async def acquire(pool: AsyncConnectionPool, config: DatabaseConnectorConfig) -> psycopg.AsyncConnection:
    """A pooled connection; fails fast when the pool's connection attempt fails meanwhile.

    The pool retries failed connections in the background and only tells a waiting caller that
    it timed out, so wait in short slices and give up as soon as an attempt has failed.
    """
    key = _conninfo_key(str(pool.conninfo))
    began = time.monotonic()
    deadline = began + config.connect_timeout + config.statement_timeout_ms / 1000
    while True:
        try:
            return await pool.getconn(timeout=max(0.01, min(_POLL_SECONDS, deadline - time.monotonic())))
        except PoolTimeout:
            failure = _connect_errors.get(key)
            if failure is not None and failure[0] >= began:
                raise ConnectFailed(failure[1]) from None
            if time.monotonic() >= deadline:
                raise
