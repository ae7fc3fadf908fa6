"""A run's writes beside its event stream: named operations of one protocol (the run's unit of work).

A run's event stream is its events. Everything else a run writes while it works (the call log's rows,
the tool ledger's rows, its end, a budget warning) is a :class:`RunWrite`: a named operation whose
``apply`` the run's writer (:class:`RunWrites`; the event sink of ``agents.runs.events.store``) runs in
its database thread, inside the transaction of the run's next batch of events, so it costs the run no
transaction and no database hop of its own.

- :meth:`RunWrites.write_later`: the write joins the next batch; nobody waits for it.
- :meth:`RunWrites.write_durable`: the caller awaits the write's commit and gets what ``apply`` returned
  (what must be recorded before something happens: a tool call's ledger and call-log rows); a write the
  database refuses raises there, and costs the batch's events nothing.

The operations are defined by the apps that own the rows; this module knows no database.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol, TypeVar

__all__ = ["RunWrite", "RunWrites"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class RunWrite(Protocol[T_co]):
    """One named write of a run (a frozen dataclass of what it writes, as a rule)."""

    def apply(self) -> T_co:
        """Make the write: sync, in the writer's database thread, inside the batch's transaction."""
        ...


class RunWrites(Protocol):
    """Where a run's writes go: the run's event sink."""

    def write_later(self, write: RunWrite[object]) -> None:
        """Apply ``write`` in the transaction of the run's next batch of events."""
        ...

    def write_durable(self, write: RunWrite[T]) -> Awaitable[T]:
        """Apply ``write`` with the next batch; resolves with what it returned once it has committed."""
        ...
