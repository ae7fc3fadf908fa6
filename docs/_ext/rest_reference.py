"""The REST reference page, generated from the live OpenAPI schema at build time (no server needed).

On ``builder-inited`` Django is set up with the platform's settings and drf-spectacular generates the
schema that ``/api/schema/`` serves; :func:`render` turns it into ``developer-guide/rest-reference.md``:
every path, every method, its parameters, request body and responses, then every schema's fields. The
file is written only when it changed, so Sphinx's incremental builds stay incremental.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

PAGE = Path("developer-guide") / "rest-reference.md"
METHODS = ("get", "post", "put", "patch", "delete", "head", "options")
INTRO = """\
# REST reference

Generated from the platform's OpenAPI schema when the documentation is built, so it lists exactly the
routes the code serves; do not edit it by hand. The running platform serves the same schema at
`/api/schema/` (YAML; `?format=json` for JSON) and browses it in Swagger UI at `/api/schema/swagger-ui/`,
whose scripts and styles come from the platform itself, not a CDN. How to authenticate and the rules every
route follows: [REST API](rest-api.md).
"""


def _text(value: object) -> str:
    """One line of Markdown-safe text: no raw HTML, no table breaks."""
    text = " ".join(str(value or "").split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def _label(name: str) -> str:
    return "schema-" + "".join(ch if ch.isalnum() else "-" for ch in name).lower()


def _schema_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _type(schema: dict[str, Any] | None) -> str:
    """A short type: ``string``, ``integer``, ``array of X``, a link to a named schema, or a union."""
    if not schema:
        return ""
    if "$ref" in schema:
        name = _schema_name(schema["$ref"])
        return f"{{ref}}`{name} <{_label(name)}>`"
    for key in ("oneOf", "anyOf", "allOf"):
        if key in schema:
            return " or ".join(filter(None, (_type(part) for part in schema[key])))
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array":
        return f"array of {_type(schema.get('items'))}".strip()
    if schema.get("format"):
        kind = f"{kind} ({schema['format']})"
    if schema.get("enum"):
        kind += ": " + ", ".join(f"`{value}`" for value in schema["enum"] if value not in ("", None))
    return kind


def _operation(method: str, path: str, op: dict[str, Any]) -> list[str]:
    lines = [f"### `{method.upper()} {path}`", ""]
    summary = op.get("summary") or op.get("description")
    if summary:
        lines += [_text(summary), ""]
    lines += [f"Operation `{op.get('operationId', '')}`; tags: {', '.join(op.get('tags', [])) or '—'}.", ""]
    parameters = op.get("parameters") or []
    if parameters:
        lines += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
        for param in parameters:
            lines.append(
                f"| `{param['name']}` | {param.get('in', '')} | {_type(param.get('schema'))} | "
                f"{'yes' if param.get('required') else 'no'} | {_text(param.get('description'))} |"
            )
        lines.append("")
    body = op.get("requestBody")
    if body:
        kinds = body.get("content", {})
        described = ", ".join(f"`{mime}`: {_type(media.get('schema'))}" for mime, media in kinds.items())
        lines += [f"**Request body**{' (required)' if body.get('required') else ''}: {described}", ""]
    responses = op.get("responses") or {}
    if responses:
        lines.append("**Responses**:")
        lines.append("")
        for status, response in responses.items():
            media = next(iter((response.get("content") or {}).values()), {})
            kind = _type(media.get("schema"))
            lines.append(f"- `{status}` {_text(response.get('description'))}{': ' + kind if kind else ''}")
        lines.append("")
    return lines


def _schema(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"({_label(name)})=", f"### {name}", ""]
    if schema.get("description"):
        lines += [_text(schema["description"]), ""]
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    if properties:
        lines += ["| field | type | required | notes |", "|---|---|---|---|"]
        for field, spec in properties.items():
            notes = [
                "read-only" if spec.get("readOnly") else "",
                "write-only" if spec.get("writeOnly") else "",
            ]
            notes.append(_text(spec.get("description")))
            lines.append(
                f"| `{field}` | {_type(spec)} | {'yes' if field in required else 'no'} | "
                f"{'; '.join(n for n in notes if n)} |"
            )
        lines.append("")
    elif schema.get("enum") or schema.get("type"):
        lines += [f"Type: {_type(schema)}", ""]
    return lines


def routes(schema: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (METHOD, path) the schema declares, in the order the page lists them."""
    return [
        (method.upper(), path)
        for path, item in sorted(schema.get("paths", {}).items())
        for method in METHODS
        if method in item
    ]


def render(schema: dict[str, Any]) -> str:
    """The reference page's Markdown for an OpenAPI 3 schema (a dict, as ``/api/schema/`` serves it)."""
    info = schema.get("info", {})
    lines = [
        INTRO,
        f"Schema: *{_text(info.get('title'))}*, version {_text(info.get('version'))}, "
        f"OpenAPI {schema.get('openapi', '')}; {len(routes(schema))} operations.",
        "",
    ]
    lines += ["## Operations", ""]
    for path, item in sorted(schema.get("paths", {}).items()):
        for method in METHODS:
            if method in item:
                lines += _operation(method, path, item[method])
    components = schema.get("components", {}).get("schemas", {})
    if components:
        lines += ["## Schemas", ""]
        for name in sorted(components):
            lines += _schema(name, components[name])
    return "\n".join(lines).rstrip() + "\n"


def live_schema() -> dict[str, Any]:
    """The schema ``/api/schema/`` serves, generated in process with the platform's settings."""
    root = Path(__file__).resolve().parents[2]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    import django

    django.setup()
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.settings import spectacular_settings

    generator = SchemaGenerator()
    schema = generator.get_schema(request=None, public=spectacular_settings.SERVE_PUBLIC)
    return json.loads(json.dumps(schema, default=str))  # lazy translations and the like to plain JSON


def _write_page(app: Any) -> None:
    target = Path(app.srcdir) / PAGE
    text = render(live_schema())
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _write_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
