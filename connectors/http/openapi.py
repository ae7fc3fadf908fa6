"""OpenAPI 3.0/3.1 documents (JSON or YAML text) to connector action specs.

Each operation becomes one :class:`ImportedAction`: its name is the ``operationId`` (or method and path),
its description the summary and description, and its parameters one JSON-schema object that merges the
path, query and header parameters with the properties of the JSON request body; ``param_locations`` says
where each argument goes. Local ``$ref``s are resolved (recursive schemas are cut at the recursion).
Invalid documents raise :class:`OpenAPIError` naming what is wrong and where.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from connectors.http.request import WRITE_METHODS

HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head")
_IGNORED_METHODS = ("options", "trace")
_PARAM_LOCATIONS = {"path", "query", "header"}
MAX_DOCUMENT_CHARS = 5_000_000
MAX_ACTION_NAME = 64
# Keywords of the OpenAPI schema dialect that are documentation or have no JSON-schema meaning here.
_DROPPED_KEYWORDS = frozenset({"example", "examples", "xml", "discriminator", "externalDocs", "deprecated"})


class UnsupportedOperation(Exception):
    """An operation that cannot become an action (it is skipped and reported, the import goes on)."""


class OpenAPIError(ValueError):
    """The document is not a usable OpenAPI 3 document. ``location`` is a dotted path into it."""

    def __init__(self, message: str, location: str = "") -> None:
        self.message = message
        self.location = location
        super().__init__(f"{message} (at {location})" if location else message)


@dataclass(frozen=True, slots=True)
class ImportedAction:
    """One operation of the document, ready to become a :class:`~connectors.models.ConnectorAction`."""

    name: str
    description: str
    method: str
    path_template: str
    parameters: dict[str, Any]
    param_locations: dict[str, str]
    is_write: bool


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """The operations of a document, its first absolute server URL (a default base URL), and the
    operations that were skipped as ``(location, reason)``."""

    title: str
    server_url: str
    actions: tuple[ImportedAction, ...] = field(default_factory=tuple)
    skipped: tuple[tuple[str, str], ...] = field(default_factory=tuple)


def load_document(text: str) -> dict[str, Any]:
    """Parse JSON or YAML text into a mapping, with a clear error for anything else."""
    if not text or not text.strip():
        raise OpenAPIError("the document is empty")
    if len(text) > MAX_DOCUMENT_CHARS:
        raise OpenAPIError(f"the document is larger than {MAX_DOCUMENT_CHARS:,} characters")
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise OpenAPIError(f"invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from exc
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or "could not be parsed"
            raise OpenAPIError(f"invalid YAML: {problem}{where}") from exc
    if not isinstance(data, dict):
        raise OpenAPIError("the document must be a JSON or YAML object")
    return data


def parse_openapi(text: str) -> ParsedDocument:
    """Turn an OpenAPI 3 document into action specs."""
    return parse_openapi_document(load_document(text))


def parse_openapi_document(doc: Mapping[str, Any]) -> ParsedDocument:
    """Like :func:`parse_openapi` for an already parsed document."""
    version = doc.get("openapi")
    if version is None:
        if "swagger" in doc:
            raise OpenAPIError("Swagger 2.0 documents are not supported; convert it to OpenAPI 3", "swagger")
        raise OpenAPIError("the 'openapi' version field is missing", "openapi")
    if not str(version).startswith("3."):
        raise OpenAPIError(f"unsupported OpenAPI version {version!r}; 3.0 and 3.1 are supported", "openapi")
    paths = doc.get("paths")
    if not isinstance(paths, dict):
        raise OpenAPIError("'paths' must be an object of path items", "paths")
    resolver = _Resolver(doc)
    actions: list[ImportedAction] = []
    skipped: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for path, raw_item in paths.items():
        where = f"paths.{path}"
        if not isinstance(path, str) or not path.startswith("/"):
            raise OpenAPIError("a path must start with '/'", where)
        item = resolver.resolve(raw_item, where)
        if not isinstance(item, dict):
            raise OpenAPIError("a path item must be an object", where)
        shared = _parameter_list(resolver, item.get("parameters", []), f"{where}.parameters")
        for method in HTTP_METHODS:
            if method not in item:
                continue
            op_where = f"{where}.{method}"
            operation = resolver.resolve(item[method], op_where)
            if not isinstance(operation, dict):
                raise OpenAPIError("an operation must be an object", op_where)
            try:
                action = _operation_to_action(resolver, path, method, operation, shared, op_where)
            except UnsupportedOperation as exc:
                skipped.append((op_where, str(exc)))
                continue
            if action.name in seen:
                raise OpenAPIError(
                    f"two operations are both named {action.name!r} (also {seen[action.name]})", op_where
                )
            seen[action.name] = op_where
            actions.append(action)
    info = doc.get("info")
    if not isinstance(info, dict):
        info = {}
    return ParsedDocument(
        title=str(info.get("title", "")),
        server_url=_first_absolute_server(doc),
        actions=tuple(actions),
        skipped=tuple(skipped),
    )


def action_name_for(method: str, path: str, operation_id: str | None) -> str:
    """``operationId`` sanitised to ``[A-Za-z0-9_-]``, or ``<method>_<path words>`` without one."""
    raw = operation_id or f"{method}_{path}"
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", raw).strip("_-")
    name = re.sub(r"_{2,}", "_", name)
    return (name or method.lower())[:MAX_ACTION_NAME]


def _first_absolute_server(doc: Mapping[str, Any]) -> str:
    servers = doc.get("servers")
    if isinstance(servers, list):
        for server in servers:
            url = server.get("url") if isinstance(server, dict) else None
            if isinstance(url, str) and url.startswith(("http://", "https://")) and "{" not in url:
                return url.rstrip("/")
    return ""


def _parameter_list(resolver: _Resolver, raw: Any, where: str) -> dict[tuple[str, str], dict[str, Any]]:
    if raw in (None, []):
        return {}
    if not isinstance(raw, list):
        raise OpenAPIError("'parameters' must be a list", where)
    params: dict[tuple[str, str], dict[str, Any]] = {}
    for index, entry in enumerate(raw):
        p_where = f"{where}[{index}]"
        param = resolver.resolve(entry, p_where)
        if not isinstance(param, dict) or not isinstance(param.get("name"), str) or not param.get("in"):
            raise OpenAPIError("a parameter needs a 'name' and an 'in'", p_where)
        params[(param["name"], param["in"])] = {**param, "_where": p_where}
    return params


def _operation_to_action(
    resolver: _Resolver,
    path: str,
    method: str,
    operation: dict[str, Any],
    shared: dict[tuple[str, str], dict[str, Any]],
    where: str,
) -> ImportedAction:
    params = {**shared, **_parameter_list(resolver, operation.get("parameters", []), f"{where}.parameters")}
    properties: dict[str, Any] = {}
    required: list[str] = []
    locations: dict[str, str] = {}
    for (name, location), param in params.items():
        if location == "cookie":
            continue  # the adapters send no cookies; such parameters cannot be filled in
        if location not in _PARAM_LOCATIONS:
            raise OpenAPIError(f"unknown parameter location {location!r}", param["_where"])
        if name in locations:
            raise UnsupportedOperation(
                f"parameter {name!r} is both a {locations[name]} and a {location} parameter"
            )
        schema = _parameter_schema(resolver, param)
        if param.get("description") and "description" not in schema:
            schema["description"] = str(param["description"])
        properties[name] = schema
        locations[name] = location
        if location == "path" or param.get("required"):
            required.append(name)
    for placeholder in re.findall(r"{([^}]+)}", path):
        if placeholder not in locations:
            raise OpenAPIError(f"path placeholder {{{placeholder}}} has no path parameter", where)
    body = _json_body_schema(resolver, operation.get("requestBody"), f"{where}.requestBody")
    if body is not None:
        body_schema = body
        for name, schema in (body_schema.get("properties") or {}).items():
            if name in locations:
                raise UnsupportedOperation(
                    f"request body property {name!r} has the same name as a {locations[name]} parameter"
                )
            properties[name] = schema
            locations[name] = "body"
        required.extend(n for n in body_schema.get("required", []) if n in properties)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = list(dict.fromkeys(required))
    parameters["additionalProperties"] = False
    operation_id = operation.get("operationId")
    return ImportedAction(
        name=action_name_for(method, path, operation_id if isinstance(operation_id, str) else None),
        description=_describe(operation),
        method=method.upper(),
        path_template=path,
        parameters=parameters,
        param_locations=locations,
        is_write=method.upper() in WRITE_METHODS,
    )


def _describe(operation: Mapping[str, Any]) -> str:
    summary = str(operation.get("summary") or "").strip()
    description = str(operation.get("description") or "").strip()
    if summary and description and description != summary:
        return f"{summary}\n\n{description}"
    return summary or description


def _parameter_schema(resolver: _Resolver, param: Mapping[str, Any]) -> dict[str, Any]:
    where = param["_where"]
    if "schema" in param:
        return resolver.schema(param["schema"], f"{where}.schema")
    content = param.get("content")
    if isinstance(content, dict) and content:
        media = next(iter(content.values()))
        if isinstance(media, dict) and "schema" in media:
            return resolver.schema(media["schema"], f"{where}.content.schema")
    return {"type": "string"}


def _json_body_schema(resolver: _Resolver, raw: Any, where: str) -> dict[str, Any] | None:
    if raw is None:
        return None
    body = resolver.resolve(raw, where)
    if not isinstance(body, dict):
        raise OpenAPIError("'requestBody' must be an object", where)
    content = body.get("content")
    if not isinstance(content, dict):
        raise OpenAPIError("'requestBody' needs a 'content' object", where)
    media_type = next(
        (m for m in content if m.split(";")[0].strip() == "application/json" or m.endswith("+json")), None
    )
    if media_type is None:
        raise UnsupportedOperation(
            f"only JSON request bodies are supported, not {', '.join(content) or 'none'}"
        )
    media = content[media_type] if isinstance(content[media_type], dict) else {}
    schema = resolver.schema(media.get("schema", {}), f"{where}.content.{media_type}.schema", request=True)
    schema = _flatten_all_of(schema)
    if schema.get("type") not in (None, "object") or (schema and "properties" not in schema):
        raise UnsupportedOperation("the JSON request body is not an object with properties")
    # The body's required properties stay required even when the body itself is optional in the
    # document: an agent that sends a body must send a valid one.
    return schema


def _flatten_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    """Merge an ``allOf`` of object schemas into one object (the common shape of request bodies)."""
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    properties = dict(merged.get("properties") or {})
    required = list(merged.get("required") or [])
    for part in parts:
        part = _flatten_all_of(part) if isinstance(part, dict) else {}
        properties.update(part.get("properties") or {})
        required.extend(part.get("required") or [])
    merged["type"] = "object"
    merged["properties"] = properties
    if required:
        merged["required"] = list(dict.fromkeys(required))
    return merged


class _Resolver:
    """Resolves local ``$ref``s and turns OpenAPI schemas into plain JSON schemas."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc

    def lookup(self, ref: str, where: str) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise OpenAPIError(f"only local references ('#/...') are supported, not {ref!r}", where)
        node: Any = self.doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise OpenAPIError(f"reference {ref!r} points to nothing", where)
        return node

    def resolve(self, node: Any, where: str) -> Any:
        """Follow ``$ref`` chains of a non-schema object (path item, parameter, request body)."""
        seen: set[str] = set()
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                raise OpenAPIError(f"reference {ref!r} refers to itself", where)
            seen.add(ref)
            node = self.lookup(ref, where)
        return node

    def schema(self, node: Any, where: str, *, request: bool = False) -> dict[str, Any]:
        result = self._convert(node, where, (), request)
        return result if isinstance(result, dict) else {}

    def _convert(self, node: Any, where: str, stack: tuple[str, ...], request: bool) -> Any:
        if isinstance(node, list):
            return [self._convert(n, f"{where}[{i}]", stack, request) for i, n in enumerate(node)]
        if not isinstance(node, dict):
            return copy.deepcopy(node)
        if "$ref" in node:
            ref = node["$ref"]
            if ref in stack:
                return {"type": "object", "description": f"(recursive {ref.rsplit('/', 1)[-1]})"}
            target = self.lookup(ref, where)
            return self._convert(target, where, (*stack, ref), request)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if (
                key in _DROPPED_KEYWORDS
                or key in ("nullable", "readOnly", "writeOnly")
                or key.startswith("x-")
            ):
                continue
            if key == "properties" and isinstance(value, dict):
                props = {}
                for name, sub in value.items():
                    if request and isinstance(sub, dict) and sub.get("readOnly") is True:
                        continue  # server-set fields (ids, timestamps) are not sent
                    props[name] = self._convert(sub, f"{where}.properties.{name}", stack, request)
                out[key] = props
            elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                bound = "minimum" if key == "exclusiveMinimum" else "maximum"
                if value and bound in node:
                    out[key] = node[bound]
            else:
                out[key] = self._convert(value, f"{where}.{key}", stack, request)
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if node.get(key) is True:
                out.pop(bound, None)
        if request and "properties" in out and "required" in out and isinstance(out["required"], list):
            out["required"] = [n for n in out["required"] if n in out["properties"]]
            if not out["required"]:
                del out["required"]
        if node.get("nullable") is True:
            kind = out.get("type")
            if isinstance(kind, str):
                out["type"] = [kind, "null"]
            elif "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        return out
