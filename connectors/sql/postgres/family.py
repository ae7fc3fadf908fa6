"""The PostgreSQL family: servers that speak PostgreSQL's protocol and catalogue under their own name.

KingbaseES (人大金仓), openGauss (and GaussDB built on it) and HighGo DB (瀚高) are reached through the
PostgreSQL driver and adapter; the admin names them so that Test connection can say which server
answered and warn when it is not the one chosen. Their ``version()`` text names the product. What
was tested here: the PostgreSQL adapter, the schema tools' catalogue queries (portable ones, no
``to_regclass``, which openGauss's PostgreSQL 9.2 base lacks) and this version check, against
PostgreSQL 15. None of the three products was available to test against.
"""

from __future__ import annotations

PG_FAMILY: dict[str, str] = {
    "postgresql": "PostgreSQL",
    "kingbase": "KingbaseES",
    "opengauss": "openGauss",
    "highgo": "HighGo",
}
# Words each product's version() contains (case-insensitive), most specific first.
_MARKERS = (
    ("kingbase", "kingbase"),
    ("opengauss", "opengauss"),
    ("gaussdb", "opengauss"),
    ("highgo", "highgo"),
)


def product_of(version_text: str) -> str:
    """The family member a server's ``version()`` names (``postgresql`` when it names none)."""
    text = version_text.lower()
    return next((engine for marker, engine in _MARKERS if marker in text), "postgresql")


def server_summary(engine: str, version_text: str, server_version: str) -> str:
    """``<product> <version>`` of the server, and a warning when it is not the engine the admin chose."""
    found = product_of(version_text)
    summary = f"{PG_FAMILY[found]} {server_version}"
    if engine in PG_FAMILY and engine != found:
        summary += f" (warning: the server says it is {PG_FAMILY[found]}, not {PG_FAMILY[engine]})"
    return summary
