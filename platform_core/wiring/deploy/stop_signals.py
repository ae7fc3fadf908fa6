"""A stop request by signal, for the commands that run the platform's processes until Ctrl-C."""

from __future__ import annotations

import signal
from types import FrameType


class StopSignals:
    """``received`` turns True once SIGINT or SIGTERM arrives, after :meth:`install`."""

    def __init__(self) -> None:
        self.received = False

    def install(self) -> StopSignals:
        """Catch SIGINT and SIGTERM from now on (instead of their default handling); this object."""
        signal.signal(signal.SIGINT, self._receive)
        signal.signal(signal.SIGTERM, self._receive)
        return self

    def _receive(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
