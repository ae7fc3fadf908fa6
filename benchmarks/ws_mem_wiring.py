"""The platform's ASGI application with tracemalloc on, for ``benchmarks/ws_mem.py`` (benchmark only).

``SIGUSR1`` collects garbage and writes a tracemalloc snapshot to ``$WS_MEM_DIR/snap-<k>.pickle``.
"""

from __future__ import annotations

import gc
import os
import signal
import tracemalloc
from pathlib import Path
from typing import Any

from platform_core.wiring.asgi import application

__all__ = ["application"]

tracemalloc.start(int(os.environ.get("WS_MEM_FRAMES", "10")))
_count = [0]


def _snapshot(signum: int, frame: Any) -> None:
    gc.collect()
    _count[0] += 1
    target = Path(os.environ["WS_MEM_DIR"]) / f"snap-{_count[0]}.pickle"
    tracemalloc.take_snapshot().dump(str(target))
    target.with_suffix(".done").touch()


signal.signal(signal.SIGUSR1, _snapshot)
