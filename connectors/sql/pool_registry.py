"""The connection pools of one kind of database connector: one per connector and event loop.

A pool belongs to the loop it was made in (:mod:`connectors.loop_cache`) and to the connector's
settings it was made for: when the DSN, the allowed private hosts, the pool size or the connect
timeout change, the next call gets a new pool and the old one is closed. PostgreSQL
(:mod:`connectors.sql.postgres.pool`) and MySQL (:mod:`connectors.sql.mysql.pool`) pools share this bookkeeping.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from connectors.adapter_types import DatabaseConnectorConfig
from connectors.loop_cache import PerLoop
from connectors.ssrf import normalise_host

P = TypeVar("P")


def pool_fingerprint(config: DatabaseConnectorConfig) -> str:
    """What a connector's pool depends on (DSN, allowed hosts, size, connect timeout): a new one, a new pool."""
    allowed = ",".join(sorted(normalise_host(h) for h in config.allowed_private_hosts))
    raw = "\x00".join([config.dsn, allowed, str(config.pool_max_size), str(config.connect_timeout)])
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class _Entry(Generic[P]):
    fingerprint: str
    pool: P


class PoolRegistry(Generic[P]):
    """Per event loop, each connector's pool, made by ``create`` and closed by ``close``."""

    def __init__(
        self,
        create: Callable[[DatabaseConnectorConfig], Awaitable[P]],
        close: Callable[[P], Awaitable[None]],
    ) -> None:
        self._create = create
        self._close = close
        self._entries: PerLoop[dict[str, _Entry[P]]] = PerLoop(dict)
        self._locks: PerLoop[dict[str, asyncio.Lock]] = PerLoop(dict)

    async def pool_for(self, config: DatabaseConnectorConfig) -> P:
        """The connector's pool in this loop; (re)created when its DSN or limits change."""
        lock = self._locks.get().setdefault(config.connector_id, asyncio.Lock())
        async with lock:
            entries = self._entries.get()
            fingerprint = pool_fingerprint(config)
            entry = entries.get(config.connector_id)
            if entry is not None and entry.fingerprint == fingerprint:
                return entry.pool
            pool = await self._create(config)
            entries[config.connector_id] = _Entry(fingerprint, pool)
            if entry is not None:
                await self._close(entry.pool)
            return pool

    async def aclose(self) -> None:
        """Close the pools of the running event loop (call on shutdown and in tests)."""
        entries = self._entries.pop() or {}
        self._locks.pop()
        for entry in entries.values():
            await self._close(entry.pool)
