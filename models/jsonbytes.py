"""JSON bytes kept by the thousand: a flush's metric messages, a shipper's batch of lines.

orjson writes into a buffer of at least 1 kB and shrinks it to the text's size when done; a
small message kept alive keeps its heap block apart from the freed rest, so the next one takes
fresh memory: 1.9 us a 170-byte message when 10,000 are kept, 0.18 us when each is dropped at
once (measured on the project's 2-core VM, Python 3.11, orjson 3.13). A copy of exactly the
text's size lets the buffer be reused: 0.33 us. Bytes that are sent or joined at once do not
need it (the live job path: 8 % more job events/s in process with its messages copied).
"""

from __future__ import annotations

from typing import Any

import orjson


def json_bytes(obj: Any) -> bytes:
    """``orjson.dumps(obj)``, the same bytes, in a block of their own size."""
    return bytes(memoryview(orjson.dumps(obj)))
