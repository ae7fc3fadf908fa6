"""Settings as a new process reads them from its environment: a Python process started on the
deployment's settings module, with the environment the test gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def printed_after_setup(code: str, env: dict[str, str], *, dropped: tuple[str, ...]) -> str:
    """What ``code`` prints after ``django.setup()`` in a new process whose environment is this one's
    without the variables starting with ``dropped``, plus ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "platform_core.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()
