"""The sink contract, kept importable from here: it is defined in :mod:`streams.contracts`.

A run writes through one or more sinks; nothing a sink was given is visible before
``Sink.commit``, and ``Sink.abort`` (an error, SIGINT) leaves what was there before.
"""

from __future__ import annotations

from streams.contracts import Row, Sink, Table

__all__ = ["Row", "Sink", "Table"]
