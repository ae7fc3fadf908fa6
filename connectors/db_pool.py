"""Connection pools of database connectors: one per connector and event loop.

Each pool connects to the SSRF-checked, pinned address of the connector's DSN
(:mod:`connectors.pg_dsn`), runs ``DISCARD ALL`` before a connection is reused, and is rebuilt
when the connector's DSN or limits change. psycopg's pool retries failed connections in the
background and only tells a waiting caller that it timed out; :func:`acquire` remembers why the
attempt failed and gives up at once with that reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from connectors.adapter_types import DatabaseConnectorConfig
from connectors.loop_cache import PerLoop
from connectors.pg_dsn import pinned_conninfo
from connectors.ssrf import normalise_host


def db_message(exc: psycopg.Error) -> str:
    """The server's one-line message for ``exc`` (no DSN, at most 300 characters)."""
    primary = getattr(getattr(exc, "diag", None), "message_primary", None) or str(exc)
    return " ".join(primary.split())[:300]


@dataclass(frozen=True, slots=True)
class _PoolEntry:
    fingerprint: str
    pool: AsyncConnectionPool


_pools: PerLoop[dict[str, _PoolEntry]] = PerLoop(dict)
_pool_locks: PerLoop[dict[str, asyncio.Lock]] = PerLoop(dict)


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
    async def connect(cls, conninfo: str = "", **kwargs: Any) -> _PoolConnection:  # type: ignore[override]
        try:
            conn = await super().connect(conninfo, **kwargs)
        except psycopg.OperationalError as exc:
            _connect_errors[_conninfo_key(conninfo)] = (time.monotonic(), db_message(exc))
            raise
        _connect_errors.pop(_conninfo_key(conninfo), None)
        return conn


async def _reset_session(conn: psycopg.AsyncConnection) -> None:
    await conn.execute("DISCARD ALL")


def pool_fingerprint(config: DatabaseConnectorConfig) -> str:
    """What a connector's pool depends on (DSN, allowed hosts, size, connect timeout): a new one, a new pool."""
    allowed = ",".join(sorted(normalise_host(h) for h in config.allowed_private_hosts))
    raw = "\x00".join([config.dsn, allowed, str(config.pool_max_size), str(config.connect_timeout)])
    return hashlib.sha256(raw.encode()).hexdigest()


async def pool_for(config: DatabaseConnectorConfig) -> AsyncConnectionPool:
    """The connector's pool in this loop; (re)created when its DSN or limits change."""
    lock = _pool_locks.get().setdefault(config.connector_id, asyncio.Lock())
    async with lock:
        pools = _pools.get()
        fingerprint = pool_fingerprint(config)
        entry = pools.get(config.connector_id)
        if entry is not None and entry.fingerprint == fingerprint:
            return entry.pool
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
        pools[config.connector_id] = _PoolEntry(fingerprint, pool)
        if entry is not None:
            await entry.pool.close()
        return pool


async def aclose_pools() -> None:
    """Close the connection pools of the running event loop (call on shutdown and in tests)."""
    entries = _pools.pop() or {}
    _pool_locks.pop()
    for entry in entries.values():
        await entry.pool.close()


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
