"""The shippers' contract: one :class:`Shipper` shape, one :class:`ShipStats`, one file-position
:class:`Checkpoint`, and the dead letters every shipper sends.

A shipper moves one source system's records to Kafka in five steps:

* read: its source (log files, a followed log, Slurm's clients, sacct, a jobcomp topic, /proc)
  with the replay's readers and parsers (``streams.sources``, ``models.formats``), so a record
  shipped is the record ``drainwatch replay`` reads;
* batches: one partition's records per message (a node's, a job's or a node's samples always
  on one partition, in order);
* send: the messages and the dead letters (``<prefix>dead-letter``: source, line, reason and
  text), then the shipper's watermark markers (:mod:`streams.ship.markers`) after every record
  they cover;
* checkpoint: only what the broker acknowledged (:class:`Checkpoint` for a followed log,
  sacct's high-water mark, a jobcomp consumer's offsets); a shipper killed in between sends
  that part again on restart (at-least-once);
* stats: :class:`ShipStats`, shown in the shipper's summary line when it ends.
"""

from __future__ import annotations

import asyncio
import errno
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from models.records.reject import Reject
from streams.atomic import atomic_file
from streams.codecs.deadletter import dead_letter_message
from streams.contracts import RejectLog
from streams.errors import FileRefused, UserError, read_small

IN_FLIGHT = 10_000  # messages sent before awaiting their acknowledgements


@dataclass(slots=True)
class ShipStats:
    """Every shipper's counters. Each counts what it does; its summary shows those (a counter a
    shipper never touches stays 0)."""

    # read
    files: int = 0  # input files (ship jobs FILE..., ship sample-files)
    lines: int = 0  # log lines read (ship moab)
    ignored: int = 0  # lines that hold no node-status record (ship moab)
    iterations: int = 0  # Slurm snapshots published whole (ship slurm)
    sweeps: int = 0  # node sweeps: taken (ship samples), shipped (ship sample-files)
    failed_polls: int = 0  # sacct polls that failed (ship jobs --sacct)
    # sent
    records: int = 0  # node-status records (moab, slurm); jobcomp messages consumed (jobcomp)
    events: int = 0  # job events
    samples: int = 0  # node samples (ship sample-files)
    messages: int = 0  # messages of records (not markers, not dead letters)
    split: int = 0  # messages cut in halves to fit max_bytes (ship moab)
    dead_letters: int = 0
    bad: int = 0  # jobcomp messages dead-lettered whole or in part
    markers: int = 0
    sent_sweeps: int = 0  # ship samples --kafka: sweeps the broker acknowledged
    sent_samples: int = 0
    dropped_sweeps: int = 0  # oldest sweeps dropped past the buffer cap
    dropped_samples: int = 0
    # failed
    send_failures: int = 0  # connection or send attempts that failed (ship samples --kafka)
    failed_attempts: int = 0  # snapshots taken again (ship slurm)
    skipped_iterations: int = 0  # every attempt failed: nothing sent for that period
    publish_failures: int = 0  # iterations the broker did not acknowledge
    refused_snapshots: int = 0  # a command printed more than the cap: skipped, not retried
    planned_unnamed: int = 0  # IDLE+PLANNED node-iterations no pending job named
    unknown_flags: Counter[str] = field(default_factory=Counter)
    last_error: str = ""


class Shipper(Protocol):
    """One source system to Kafka: read -> batches -> send -> checkpoint -> stats (the module
    doc). ``drainwatch ship`` builds one, runs it, asks for its last marker round (best
    effort), closes what it opened and logs its summary."""

    stats: ShipStats

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Ship until the input ends (whole files, ``--count``) or, a live source, ``stop`` is
        set; every message sent was acknowledged when it returns."""
        ...

    async def last_markers(self) -> None:
        """The marker round a live shipper sends when it stops (none when the input ended with
        its ``end`` round, or the shipper sends no markers); may raise: the caller makes it
        best effort."""
        ...

    def summary(self) -> str:
        """The shipper's result: its counters as one line."""
        ...


@dataclass
class Checkpoint:
    """How far a followed file was shipped: the file (path, device, inode) and the byte offset
    and line number after the last line the broker acknowledged."""

    path: str
    dev: int
    ino: int
    offset: int
    line: int

    @classmethod
    def load(cls, file: str) -> Checkpoint | None:
        """The checkpoint in ``file``, None when there is none yet. It must be a regular file
        of at most 1 MiB (a FIFO or a device is a user error, before it is read)."""
        try:
            data = read_small(file)
        except FileRefused as e:
            if e.errno == errno.ENOENT:
                return None
            raise UserError(f"checkpoint {e}") from None
        d = json.loads(data)
        return cls(str(d["path"]), int(d["dev"]), int(d["ino"]), int(d["offset"]), int(d["line"]))

    def save(self, file: str) -> None:
        with atomic_file(file) as f:
            f.write(json.dumps(self.__dict__).encode())


class RejectCollector(RejectLog):
    """A RejectLog that also keeps the rejects, to dead-letter them."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[Reject] = []

    def add(self, r: Reject) -> None:
        super().add(r)
        self.items.append(r)


async def dead_letter_rejects(producer: Any, dead_topic: str, rejects: list[Reject]) -> list[Any]:
    """Send each reject to the dead-letter topic (keyed by its source); the send futures."""
    return [
        await producer.send(dead_topic, orjson.dumps(dead_letter_message(r)), key=r.source.encode())
        for r in rejects
    ]
