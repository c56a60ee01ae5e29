"""What every sink does: take table rows and documents, then commit them or throw them away.

A run writes through one or more sinks; nothing a sink was given is visible before
:meth:`Sink.commit`, and :meth:`Sink.abort` (an error, SIGINT) leaves what was there before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from streams.tables import Row, Table


class Sink(Protocol):
    def declare(self, table: Table) -> None:
        """This run writes ``table`` (its header even if no row follows)."""

    def write(self, table: Table, rows: Iterable[Row]) -> int:
        """Append rows to a declared table; return how many."""

    def document(self, name: str, data: bytes) -> None:
        """A whole file (a JSON summary, a lookup table)."""

    def commit(self) -> None:
        """Make everything written visible."""

    def abort(self) -> None:
        """Throw away everything written; leave the previous outputs as they were."""
