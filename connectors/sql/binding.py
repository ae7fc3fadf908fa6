"""A SQL template's ``%(name)s`` parameters taken from an action's arguments, for either engine's driver
(each says how it binds a value). SQL text is never formatted: the driver binds the values."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_PLACEHOLDER = re.compile(r"%%|%\((\w+)\)s")


class ArgumentError(ValueError):
    """The arguments do not fit the SQL template."""


def template_params(
    sql_template: str, args: Mapping[str, Any], *, bound: Callable[[Any], Any]
) -> dict[str, Any] | None:
    """The template's parameters from ``args``, each as ``bound`` gives it to the driver; None when the
    template has none. Raises :class:`ArgumentError` naming the arguments the template needs and lacks."""
    names = [m.group(1) for m in _PLACEHOLDER.finditer(sql_template) if m.group(1)]
    if not names:
        return None
    missing = sorted({n for n in names if n not in args})
    if missing:
        raise ArgumentError(f"missing argument(s) for the query: {', '.join(missing)}")
    return {n: bound(args[n]) for n in dict.fromkeys(names)}
