"""The engine is Django-free: importing it never loads Django."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import sys
import agents.engine, agents.engine.react, agents.engine.tools, agents.engine.hooks
import agents.engine.events, agents.engine.follow_ups, agents.engine.synthesis, agents.engine.selection
loaded = sorted(m for m in sys.modules if m.startswith("django"))
assert not loaded, loaded
"""


def test_engine_imports_no_django():
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}  # no DJANGO_SETTINGS_MODULE either
    completed = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr


def test_public_api_is_re_exported_from_the_package():
    import agents.engine as engine

    for name in (
        "ReActAgent",
        "AgentResult",
        "Tool",
        "ToolRegistry",
        "ToolResult",
        "HookRegistry",
        "FollowUpQueue",
    ):
        assert hasattr(engine, name), name
