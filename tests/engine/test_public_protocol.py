"""Connectors and hooks reach the engine only through its public protocol modules: the import contracts in
pyproject.toml ("layers" names each crossing, "engine-internals" forbids the rest) keep in step with the
engine's modules."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: What a tool or a hook may import of the engine.
PUBLIC = {"tools", "hooks", "verdicts", "tool_context", "run_context", "run_writes", "strict_json"}


def _contract(contract_id: str) -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == contract_id)


def _engine_modules() -> set[str]:
    engine = ROOT / "agents" / "engine"
    return {
        path.stem if path.is_file() else path.name
        for path in engine.iterdir()
        if not path.name.startswith("__")
        and (path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists()))
    }


def test_every_engine_module_is_public_protocol_or_forbidden_to_connectors_and_hooks():
    forbidden = {m.removeprefix("agents.engine.") for m in _contract("engine-internals")["forbidden_modules"]}
    assert PUBLIC <= _engine_modules()
    assert forbidden == _engine_modules() - PUBLIC


def test_the_layers_contract_lets_connectors_and_hooks_cross_only_into_public_engine_modules():
    crossings = [
        i for i in _contract("layers")["ignore_imports"] if not i.startswith("platform_core.wiring.")
    ]
    assert crossings
    for crossing in crossings:
        importer, imported = crossing.split(" -> ")
        assert importer.split(".")[0] in ("connectors", "hooks") and "*" not in importer, crossing
        assert imported.removeprefix("agents.engine.") in PUBLIC, crossing
