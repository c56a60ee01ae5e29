"""Node-status messages: kept for old importers; the codec is :mod:`streams.codecs.nodestatus`."""

from __future__ import annotations

from streams.codecs.nodestatus import (
    MAX_ROWS,
    NODE_BLOCK,
    VERSION,
    Decoder,
    MessageError,
    encode,
    partition_of,
)

__all__ = ["MAX_ROWS", "NODE_BLOCK", "VERSION", "Decoder", "MessageError", "encode", "partition_of"]
