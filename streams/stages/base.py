"""The stage contract: state + ``step(batch) -> outputs``; the only place models are driven from.

A stage owns the models' state for one analytic. ``step`` takes one batch from a source
(NodeStatusBatch, a list of JobEvents, a list of NodeSamples...) and returns the outputs that are
final after it (closed windows, ended jobs); ``finish`` returns the rest at the end of the input.
An output is ``(table, rows)`` or ``(file name, bytes)`` for a whole document. ``replay`` and the
worker run the same stages; only the source and the sinks differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TypeVar

from streams.tables import Row, Table

B_contra = TypeVar("B_contra", contravariant=True)

Output = tuple[Table, Sequence[Row]] | tuple[str, bytes]


class Stage(Protocol[B_contra]):
    name: str

    def tables(self) -> Sequence[Table]:
        """The tables this stage writes in this run (their headers even when empty)."""

    def step(self, batch: B_contra) -> Iterable[Output]: ...

    def finish(self) -> Iterable[Output]: ...

    def summary(self) -> dict[str, Any]:
        """Stage-specific figures for the run's summary."""
