"""The stage contract, kept importable from here: it is defined in :mod:`streams.contracts`.

A stage owns the models' state for one analytic. ``step`` takes one batch from a source
(NodeStatusBatch, a list of JobEvents, a list of NodeSamples...) and returns the outputs that are
final after it (closed windows, ended jobs); ``finish`` returns the rest at the end of the input.
An output is ``(table, rows)`` or ``(file name, bytes)`` for a whole document. ``replay`` and the
worker run the same stages; only the source and the sinks differ.
"""

from __future__ import annotations

from streams.contracts import B_contra, Output, Stage

__all__ = ["B_contra", "Output", "Stage"]
