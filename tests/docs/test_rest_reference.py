"""The docs' REST reference is generated from the live OpenAPI schema: every route and method that
/api/schema/ serves has its section, and the schema browser's assets come from the platform."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from django.test import Client

ROOT = Path(__file__).resolve().parents[2]


def _rest_reference():
    spec = importlib.util.spec_from_file_location(
        "rest_reference", ROOT / "docs" / "_ext" / "rest_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _served_schema(client: Client) -> dict:
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return json.loads(response.content)


def test_the_reference_lists_every_route_and_method_of_the_served_schema(client: Client, db):
    schema = _served_schema(client)
    page = _rest_reference().render(schema)
    headings = set(re.findall(r"^### `([A-Z]+) (\S+)`$", page, flags=re.MULTILINE))
    served = {
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert len(served) > 50
    assert served <= headings, sorted(served - headings)


def test_the_build_generates_the_same_schema_as_the_server(client: Client, db):
    served = _served_schema(client)
    built = _rest_reference().live_schema()
    assert sorted(built["paths"]) == sorted(served["paths"])


def test_every_schema_the_reference_links_to_has_its_section(client: Client, db):
    page = _rest_reference().render(_served_schema(client))
    linked = set(re.findall(r"<(schema-[a-z0-9-]+)>`", page))
    defined = set(re.findall(r"^\((schema-[a-z0-9-]+)\)=$", page, flags=re.MULTILINE))
    assert linked and linked <= defined, sorted(linked - defined)


def test_swagger_ui_is_served_from_the_platform_not_a_cdn(client: Client, db):
    response = client.get("/api/schema/swagger-ui/")
    assert response.status_code == 200
    page = response.content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and all(not s.startswith(("http://", "https://", "//")) for s in sources), sources
    assert "<script>" not in page  # the platform's CSP allows no inline script
    for source in sources:
        if source.startswith("/static/"):
            assert client.get(source).status_code == 200, source
