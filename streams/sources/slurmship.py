"""The Slurm shipper: every period, a snapshot of ``scontrol show node``, ``squeue`` and the
advance reservations becomes one iteration of NodeStatus records (the mapping of
``models.formats.slurmnodes``), published as the Moab shipper publishes its lines (node-status
slices per partition, ``streams.sources.moabship.MoabShipper.send_batch``), with the
publisher's watermark markers every ``worker.marker_interval`` (ts: the latest iteration's
time) and one round when it stops.

Commands run without a shell, with a timeout. A snapshot is whole or nothing: when a command
fails, times out or prints what cannot be read, the whole snapshot is taken again (up to
``retries`` more times) and, if it still fails, the iteration is skipped and counted — never a
partial iteration. Each iteration is stamped with the time its first command started.

``text``: ``scontrol --all --oneliner show node``, ``squeue --format=%i|%T|%S|%Y|%N``,
``scontrol --oneliner show reservation``; ``json``: the ``--json`` forms (Slurm 23.02+;
``scontrol`` has no ``--json`` before). Options go before scontrol's command, as its manual
writes them. ``auto`` asks ``scontrol --version`` once and picks json from 23.02.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import orjson
from aiokafka.errors import KafkaError

from models.formats.hostlist import MAX_HOSTS
from models.formats.slurmnodes import (
    SQUEUE_FORMAT,
    SlurmIteration,
    SlurmOutputError,
    parse_nodes_json,
    parse_reservations_json,
    parse_reservations_text,
    parse_scontrol_nodes,
    parse_squeue_json,
    parse_squeue_text,
    slurm_iteration,
)
from models.records.nodestatus import NodeStatusBatch
from streams import logs
from streams.format import instant_ms

FORMATS = ("auto", "text", "json")
log = logs.get("ship.slurm")
JSON_SINCE = (23, 2)  # first release with `scontrol --json show node`


class SnapshotFailed(RuntimeError):
    """One attempt at a snapshot failed: a command failed, timed out or printed garbage."""


@dataclass(frozen=True, slots=True)
class SlurmCommands:
    """Where the Slurm clients are and how to run them."""

    scontrol: str = "scontrol"
    squeue: str = "squeue"
    form: str = "auto"  # text, json or auto
    timeout: float = 30.0  # seconds per command
    reservations: bool = True
    max_hosts: int = MAX_HOSTS
    env: dict[str, str] | None = None  # None: this process's environment
    planned_flag: bool = True  # False: SchedNodes alone hold an idle node (Slurm < 21.08)

    def run(self, argv: Sequence[str]) -> str:
        """stdout of ``argv`` (no shell); SnapshotFailed on a non-zero exit or a timeout."""
        try:
            r = subprocess.run(list(argv), capture_output=True, timeout=self.timeout,
                               env=self.env, stdin=subprocess.DEVNULL)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise SnapshotFailed(f"{argv[0]} timed out after {self.timeout:g} s") from None
        except OSError as e:
            raise SnapshotFailed(f"{argv[0]}: {e.strerror or e}") from None
        if r.returncode != 0:
            err = r.stderr.decode("utf-8", "replace").strip().splitlines()
            raise SnapshotFailed(f"{' '.join(argv[:3])} exited {r.returncode}: "
                                 f"{err[-1] if err else '(no message)'}")  # fmt: skip
        return r.stdout.decode("utf-8", "replace")

    def resolved_form(self) -> str:
        """``json`` or ``text``; ``auto`` asks ``scontrol --version`` (e.g. 'slurm 22.05.8')."""
        if self.form != "auto":
            return self.form
        m = re.search(r"(\d+)\.(\d+)", self.run([self.scontrol, "--version"]))
        if m is None:
            raise SnapshotFailed("scontrol --version printed no version")
        return "json" if (int(m.group(1)), int(m.group(2))) >= JSON_SINCE else "text"


def take_snapshot(cmds: SlurmCommands, form: str, clock: Callable[[], float]) -> SlurmIteration:
    """One iteration from the commands' outputs, stamped with the time the first started."""
    ts_ms = round(clock() * 1000)
    sc, sq, mh = cmds.scontrol, cmds.squeue, cmds.max_hosts
    try:
        if form == "json":
            nodes = parse_nodes_json(cmds.run([sc, "--json", "show", "node"]))
            jobs = parse_squeue_json(cmds.run([sq, "--all", "--array", "--json"]), mh)
            rsv = (parse_reservations_json(cmds.run([sc, "--json", "show", "reservation"]),
                                           ts_ms / 1000, mh)
                   if cmds.reservations else [])  # fmt: skip
        else:
            nodes = parse_scontrol_nodes(cmds.run([sc, "--all", "--oneliner", "show", "node"]))
            out = cmds.run([sq, "--all", "--array", f"--format={SQUEUE_FORMAT}"])
            jobs = parse_squeue_text(out, SQUEUE_FORMAT, mh)
            rsv = (parse_reservations_text(cmds.run([sc, "--oneliner", "show", "reservation"]), mh)
                   if cmds.reservations else [])  # fmt: skip
    except SlurmOutputError as e:
        raise SnapshotFailed(f"unreadable Slurm output ({e})") from None
    if not nodes:
        raise SnapshotFailed("scontrol listed no node")
    return slurm_iteration(ts_ms, nodes, jobs, rsv, cmds.planned_flag)


@dataclass
class SlurmShipStats:
    iterations: int = 0
    records: int = 0
    messages: int = 0
    failed_attempts: int = 0  # snapshots taken again
    skipped_iterations: int = 0  # every attempt failed: nothing sent for that period
    publish_failures: int = 0  # iterations the broker did not acknowledge
    planned_unnamed: int = 0  # IDLE+PLANNED node-iterations no pending job named
    unknown_flags: Counter[str] = field(default_factory=Counter)
    last_error: str = ""


def record_json(r: Any) -> bytes:
    """A NodeStatus as the JSON line ``--dry-run`` prints."""
    return orjson.dumps({"ts": instant_ms(r.ts_ms), "node": r.node, "state": r.state,
                         "rsvlist": list(r.rsvlist), "joblist": list(r.joblist)})  # fmt: skip


class SlurmShipper:
    """Snapshots -> a publisher (a MoabShipper, or ``None`` for --dry-run to ``out``)."""

    def __init__(self, cmds: SlurmCommands, publisher: Any | None, out: IO[bytes] | None = None,
                 retries: int = 2, retry_wait: float = 2.0,
                 clock: Callable[[], float] = time.time) -> None:  # fmt: skip
        self.cmds = cmds
        self.publisher = publisher
        self.out = out
        self.retries = retries
        self.retry_wait = retry_wait
        self.clock = clock
        self.form: str | None = None
        self.stats = SlurmShipStats()

    async def snapshot(self) -> SlurmIteration | None:
        """A whole snapshot, tried ``1 + retries`` times; None (counted) when every try failed."""
        for attempt in range(self.retries + 1):
            try:
                if self.form is None:
                    self.form = await asyncio.to_thread(self.cmds.resolved_form)
                return await asyncio.to_thread(take_snapshot, self.cmds, self.form, self.clock)
            except SnapshotFailed as e:
                self.stats.failed_attempts += 1
                self.stats.last_error = str(e)
                log.warning("attempt %d of %d: %s", attempt + 1, self.retries + 1, e)
                if attempt < self.retries:
                    await asyncio.sleep(self.retry_wait)
        self.stats.skipped_iterations += 1
        return None

    async def step(self) -> bool:
        """Take one snapshot and publish it whole; False when the iteration was skipped."""
        it = await self.snapshot()
        if it is None:
            return False
        s = self.stats
        s.iterations += 1
        s.records += len(it.records)
        s.planned_unnamed += it.planned_unnamed
        s.unknown_flags.update(it.unknown_flags)
        if self.publisher is None:
            if self.out is not None:
                self.out.write(b"".join(record_json(r) + b"\n" for r in it.records))
                self.out.flush()
            return True
        pub = self.publisher
        pub.reset_if_large()
        batch = NodeStatusBatch.from_records(it.records, pub.book)
        before = pub.stats.messages
        try:
            futures = await pub.send_batch(batch, "slurm")
            await asyncio.gather(*futures)  # acknowledged before the next snapshot is taken
        except KafkaError as e:  # the producer reconnects by itself; the node's next record
            s.publish_failures += 1  # closes the gap (up to accounting.max_gap)
            s.last_error = f"Kafka: {e}"
            log.warning("Kafka: %s", e)
            return False
        s.messages += pub.stats.messages - before
        return True

    async def run(self, period: float, count: int | None = None,
                  stop: asyncio.Event | None = None) -> None:  # fmt: skip
        """A snapshot every ``period`` seconds (on a fixed grid from the first; an overrun skips
        to the next tick) until ``stop`` is set or ``count`` iterations were attempted."""
        stop = stop or asyncio.Event()
        t0 = time.monotonic()
        k = 0
        while not stop.is_set():
            await self.step()
            await self.mark()
            k += 1
            if count is not None and k >= count:
                return
            now = time.monotonic()
            until = t0 + max(k, int((now - t0) // period) + 1) * period
            # a marker round every marker_interval while it waits (ts: the last iteration's)
            step = self.publisher.markers.interval if self.publisher is not None else period
            while not stop.is_set() and (left := until - time.monotonic()) > 0:
                try:
                    await asyncio.wait_for(stop.wait(), timeout=min(left, step))
                except TimeoutError:
                    pass
                await self.mark()

    async def mark(self) -> None:
        """The publisher's watermark markers when a round is due (none for --dry-run); a
        failed round is counted and tried again at the next."""
        if self.publisher is None:
            return
        try:
            await self.publisher.mark()
        except KafkaError as e:
            self.stats.last_error = f"Kafka: {e}"
            log.warning("markers: Kafka: %s", e)
