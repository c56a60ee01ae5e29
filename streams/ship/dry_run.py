"""``--dry-run`` for the shippers: a stand-in for the Kafka producer that prints what would be
sent, as JSON lines, and sends nothing.

Job events and node samples are JSON lines already (one message = several lines); node-status
messages (columnar, ``streams.codecs.nodestatus``) are printed one record a line, ``{"ts",
"node", "state", "rsv", "joblist"}`` (``rsv``: the first reservation, the one a drain is charged
to, or null); shippers' markers (``streams.codecs.control``) are not printed. Dead letters go
to standard error, one a line.
"""

from __future__ import annotations

import asyncio
import sys
from typing import IO

import orjson

from models.records.nodestatus import NO_JOB, Codebook
from streams.codecs.control import is_marker
from streams.codecs.nodestatus import Decoder
from streams.format import instant_ms


class DryRunProducer:
    """The part of AIOKafkaProducer the shippers use: ``send`` and ``partitions_for``."""

    def __init__(
        self, partitions: int, out: IO[bytes] | None = None, err: IO[bytes] | None = None
    ) -> None:
        self.partitions = partitions
        self.out = out if out is not None else sys.stdout.buffer
        self.err = err if err is not None else sys.stderr.buffer
        self.book = Codebook()
        self.decoder = Decoder(self.book)
        self.messages = 0

    async def partitions_for(self, topic: str) -> set[int]:
        return set(range(self.partitions))

    async def send(
        self, topic: str, value: bytes, key: bytes | None = None, partition: int | None = None
    ) -> asyncio.Future[None]:
        self.messages += 1
        if is_marker(value):
            pass
        elif topic.endswith("dead-letter"):
            self.err.write(value + b"\n")
        elif topic.endswith("node-status"):
            self.out.write(self._records(value))
        else:
            self.out.write(value + b"\n")
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    def _records(self, value: bytes) -> bytes:
        if b'"control"' in value[:200] and orjson.loads(value).get("control"):
            return b""
        _, b, _ = self.decoder.decode(value)
        names, states, jobs = self.book.nodes.names, self.book.states.names, self.book.jobs
        runs: dict[int, list[str]] = {}
        for row, job in zip(b.run_row.tolist(), b.run_job.tolist(), strict=True):
            runs.setdefault(row, []).append(jobs.name(job))
        lines = []
        for i in range(len(b)):
            rsv = int(b.rsv[i])
            lines.append(
                orjson.dumps(
                    {
                        "ts": instant_ms(int(b.ts_ms[i])),
                        "node": names[int(b.node[i])],
                        "state": states[int(b.state[i])],
                        "rsv": None if rsv == NO_JOB else jobs.name(rsv),
                        "joblist": runs.get(i, []),
                    }
                )
                + b"\n"
            )
        return b"".join(lines)

    async def stop(self) -> None:
        self.out.flush()
        self.err.flush()
