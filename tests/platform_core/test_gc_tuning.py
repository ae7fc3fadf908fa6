"""The server process keeps its start-up heap out of the garbage collector's full scans."""

from __future__ import annotations

import subprocess
import sys


def test_loading_the_asgi_application_freezes_the_start_up_heap_and_raises_the_young_threshold():
    probe = (
        "import gc, platform_core.asgi; "
        "from platform_core.gc_tuning import YOUNG_THRESHOLD; "
        "print(gc.get_freeze_count(), gc.get_threshold()[0] == YOUNG_THRESHOLD)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    frozen, raised = out.stdout.split()
    # Django, Channels, the engine and the openai SDK: far more objects than a bare interpreter holds
    assert int(frozen) > 50_000 and raised == "True"
