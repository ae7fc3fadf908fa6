"""Check a PostgreSQL DSN's hosts with the SSRF guard and pin them to the checked addresses.

libpq connects to ``hostaddr`` when it is given and uses ``host`` only for TLS verification and
messages, so setting ``hostaddr`` to the checked address means no second DNS lookup can send the
connection elsewhere. DSNs that would let libpq pick its target by other means are refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from connectors.sql.dsn_errors import DsnError
from connectors.ssrf import resolve_and_check

__all__ = ["DsnError", "dsn_hosts", "dsn_params", "pinned_conninfo"]

# hostaddr is ours to set; a service file could name any host.
_REFUSED_PARAMS = ("hostaddr", "service", "servicefile")


def dsn_params(dsn: str) -> dict[str, str]:
    """The DSN's parameters (URL or key=value form), or DsnError without echoing the DSN."""
    try:
        params = conninfo_to_dict(dsn)
    except Exception as exc:  # psycopg's message may quote the DSN, password included
        raise DsnError("the DSN could not be parsed") from exc
    return {k: str(v) for k, v in params.items() if v is not None}


def dsn_hosts(params: dict[str, str]) -> list[tuple[str, int]]:
    """``(host, port)`` pairs of the DSN; only TCP hosts are accepted."""
    for name in _REFUSED_PARAMS:
        if params.get(name):
            raise DsnError(f"the DSN must not set {name!r}")
    hosts = [h.strip() for h in params.get("host", "").split(",")]
    if not any(hosts):
        raise DsnError("the DSN must name a host")
    ports = [p.strip() or "5432" for p in (params.get("port") or "5432").split(",")]
    if len(ports) == 1:
        ports *= len(hosts)
    if len(ports) != len(hosts):
        raise DsnError("the DSN has a different number of hosts and ports")
    pairs = []
    for host, port in zip(hosts, ports, strict=True):
        if not host or host.startswith(("/", "@")):
            raise DsnError("unix-socket hosts are not supported; use a TCP host name or address")
        try:
            pairs.append((host, int(port)))
        except ValueError as exc:
            raise DsnError("the DSN's port is not a number") from exc
    return pairs


async def pinned_conninfo(dsn: str, *, allowed_private_hosts: Sequence[str], connect_timeout: float) -> str:
    """The DSN with ``hostaddr`` pinned to SSRF-checked addresses (raises SSRFBlocked, DsnError...)."""
    params = dsn_params(dsn)
    addresses = []
    for host, port in dsn_hosts(params):
        checked = await resolve_and_check(host, port, allowed_private_hosts=allowed_private_hosts)
        addresses.append(checked[0])
    params["hostaddr"] = ",".join(addresses)
    params["connect_timeout"] = str(max(2, math.ceil(connect_timeout)))
    return make_conninfo(**params)
