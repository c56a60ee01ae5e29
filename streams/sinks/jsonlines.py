"""The node sampler's JSON-lines sink (``drainwatch ship samples --out``): each sweep's samples
as node-sample trace lines (:mod:`models.formats.sampletrace`) on a binary stream.

A sink of :mod:`streams.ship.sampler` (a callable given each sweep), not a table
:class:`~streams.contracts.Sink`.
"""

from __future__ import annotations

from typing import IO

from models.formats.sampletrace import dumps
from models.records.nodesample import NodeSample


class JsonLinesSink:
    """Writes each sweep's samples as trace lines to a binary stream and flushes."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.lines = 0

    def __call__(self, samples: list[NodeSample]) -> None:
        if samples:
            self.stream.write(b"".join(dumps(s) + b"\n" for s in samples))
            self.lines += len(samples)
        self.stream.flush()
