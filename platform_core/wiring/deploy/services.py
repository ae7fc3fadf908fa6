"""The backing services of a multi-process deployment: PostgreSQL databases and Redis databases.

Plain psycopg and redis-py, no Django: these run before Django may connect (the database may not exist
yet) and from test and benchmark processes that configure Django for something else.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis
from psycopg import sql

logger = logging.getLogger(__name__)

POSTGRES_SCHEMES = {"postgres", "postgresql", "pgsql"}
CONNECT_TIMEOUT = 3


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and urlsplit(url).scheme in POSTGRES_SCHEMES


def database_name(url: str) -> str:
    """The database a ``postgres://`` URL names."""
    name = urlsplit(url).path.lstrip("/")
    if not name:
        raise ValueError("the PostgreSQL URL names no database")
    return name


def with_database(url: str, name: str) -> str:
    """The same server URL naming another database."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def _maintenance_conninfo(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))


def postgres_problem(url: str) -> str | None:
    """Why the server of ``url`` cannot be used (None when it answers)."""
    try:
        with psycopg.connect(_maintenance_conninfo(url), connect_timeout=CONNECT_TIMEOUT):
            return None
    except psycopg.Error as exc:
        return f"PostgreSQL at {urlsplit(url).hostname}:{urlsplit(url).port or 5432} is unreachable ({exc})"


def postgres_database_ensure(url: str) -> bool:
    """Create the database ``url`` names unless it exists; True when it was created."""
    name = database_name(url)
    with psycopg.connect(
        _maintenance_conninfo(url), autocommit=True, connect_timeout=CONNECT_TIMEOUT
    ) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists:
            return False
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    logger.info("created PostgreSQL database %s", name)
    return True


def postgres_database_drop(url: str) -> None:
    """Drop the database ``url`` names, disconnecting its sessions first (scratch databases only)."""
    name = database_name(url)
    with psycopg.connect(
        _maintenance_conninfo(url), autocommit=True, connect_timeout=CONNECT_TIMEOUT
    ) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def postgres_query(url: str, query: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Rows of one read-only query against ``url`` (tests and benchmarks inspecting a server's data)."""
    with psycopg.connect(_conninfo(url), connect_timeout=CONNECT_TIMEOUT) as conn:
        return conn.execute(query, params).fetchall()


def _conninfo(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(("postgresql", parts.netloc, parts.path, parts.query, ""))


def redis_problem(url: str) -> str | None:
    """Why the Redis server of ``url`` cannot be used (None when it answers)."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT)
        try:
            client.ping()
        finally:
            client.close()
    except redis.RedisError as exc:
        return f"Redis at {urlsplit(url).hostname}:{urlsplit(url).port or 6379} is unreachable ({exc})"
    return None


def redis_flush(url: str) -> None:
    """Empty the one Redis database ``url`` names (a scratch database of tests or benchmarks)."""
    client = redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT)
    try:
        client.flushdb()
    finally:
        client.close()
