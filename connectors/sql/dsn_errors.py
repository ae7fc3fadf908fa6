"""The error of an unusable database DSN, shared by the PostgreSQL and MySQL DSN parsers."""

from __future__ import annotations


class DsnError(ValueError):
    """The DSN is unusable; the message never contains the DSN itself."""
