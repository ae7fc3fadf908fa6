"""The shared harness of the fake protocol servers: a loopback HTTP server in a background thread.

A fake subclasses :class:`ThreadedServer`, names its request handler class in ``handler``, and gets
``start``/``stop``, use as a ``with`` block, and the server's ``http://127.0.0.1:<port>`` address
(a random free port). Its handler reaches the fake as ``self.server.owner``. :meth:`ThreadedServer.stop`
first calls :meth:`ThreadedServer.before_stop`, where a fake wakes replies that are still waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Protocol, Self, TypeVar


class OwnedHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that knows the fake it serves and keeps quiet about client errors."""

    daemon_threads = True
    block_on_close = False
    # The default backlog of 5 drops concurrent connects (load tests open many at once), which then
    # wait a 1 s SYN retransmit.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], owner: Any) -> None:
        super().__init__(address, handler)
        self.owner = owner

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # clients that time out or close early are part of the tests


class ThreadedServer:
    """Start and stop an :class:`OwnedHTTPServer` on 127.0.0.1 in a daemon thread."""

    handler: ClassVar[type[BaseHTTPRequestHandler]]

    _httpd: OwnedHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        """``http://127.0.0.1:<port>`` (raises when the server is not started)."""
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        if self._httpd is not None:
            return
        self._httpd = OwnedHTTPServer(("127.0.0.1", 0), self.handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def before_stop(self) -> None:
        """Called by :meth:`stop` before the server shuts down (wake waiting replies here)."""

    def stop(self) -> None:
        if self._httpd is None:
            return
        self.before_stop()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class Resettable(Protocol):
    """A fake that can forget what a test scripted and recorded."""

    def reset(self) -> None: ...


ResettableT = TypeVar("ResettableT", bound=Resettable)


def reset_around(server: ResettableT) -> Iterator[ResettableT]:
    """Yield ``server`` reset, and reset it again after: the body of a per-test fixture over a shared fake."""
    server.reset()
    try:
        yield server
    finally:
        server.reset()
