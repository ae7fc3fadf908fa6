"""DRF views whose work ends on the event loop.

DRF views are sync: authentication, permissions, parsing and the database work run in a thread, as
always. A view that must then wait for a run (or hand one to the process's run manager, which lives on
the event loop) returns a :class:`ContinueOnLoop`; :func:`async_view` runs the DRF view in a thread
(``sync_to_async``) and awaits the continuation on the loop, so no thread waits for a run and the loop
never waits for the database. Streams are ``StreamingHttpResponse`` objects with async iterators, which
Django serves on the loop under ASGI
(https://docs.djangoproject.com/en/5.2/ref/request-response/#streaminghttpresponse-objects).

The wrapper keeps the DRF view's ``cls``, ``initkwargs`` and ``actions``, so drf-spectacular documents it
like any DRF view.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase

Continuation = Callable[[], Awaitable[HttpResponseBase]]


class ContinueOnLoop(HttpResponse):
    """What a DRF view returns to finish its work on the event loop (never sent as such)."""

    def __init__(self, then: Continuation) -> None:
        super().__init__(status=202)
        self.then = then


def async_view(
    drf_view: Callable[..., HttpResponseBase],
) -> Callable[..., Coroutine[Any, Any, HttpResponseBase]]:
    """An async Django view that runs ``drf_view`` (``SomeAPIView.as_view()``) in a thread, then its
    continuation, if it returned one, on the event loop."""
    run_in_thread = sync_to_async(drf_view)

    async def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = await run_in_thread(request, *args, **kwargs)
        if isinstance(response, ContinueOnLoop):
            return await response.then()
        return response

    for name in ("cls", "initkwargs", "actions"):
        if hasattr(drf_view, name):
            setattr(view, name, getattr(drf_view, name))
    view.csrf_exempt = True  # type: ignore[attr-defined]  # as DRF's own views: its authentication decides
    return view
