"""Cyclic garbage collector settings for the server processes (daphne).

A full (generation 2) collection scans every object the collector tracks. With Django, the openai SDK and
their types loaded that is about 200,000 objects before the first request, and collecting them stops the
event loop for 100–150 ms on this project's benchmark machine: every event in flight waits, which is
what an event-latency p99 shows. So the server collects once after start-up and freezes what is loaded
then (modules, classes, settings: alive for the whole process) out of the collector's sight, and lets
more young objects gather before collecting them, so fewer survivors are pushed to the old generations.
Measured in benchmarks/README.md (ws_load, loop lag).
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000


def gc_tune_for_server() -> None:
    """Collect, freeze the start-up heap, and raise the young generation's threshold (once per process)."""
    if gc.get_freeze_count():
        return
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
