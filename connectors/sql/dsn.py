"""A database connector's DSN, whichever engine it is for (PostgreSQL's or MySQL's form)."""

from __future__ import annotations

from connectors.sql.dsn_errors import DsnError
from connectors.sql.mysql.dsn import is_mysql_dsn, parse_mysql_dsn
from connectors.sql.postgres.dsn import dsn_params


def dsn_password(dsn: str) -> str:
    """The DSN's password ('' if none or unparsable), so callers can redact it (MySQL URLs too)."""
    try:
        if is_mysql_dsn(dsn):
            return parse_mysql_dsn(dsn).password
        return dsn_params(dsn).get("password", "")
    except DsnError:
        return ""
