"""The Slurm shipper: every period, a snapshot of ``scontrol show node``, ``squeue`` and the
advance reservations becomes one iteration of NodeStatus records (the mapping of
``models.formats.slurmnodes``), published as the Moab shipper publishes its lines (node-status
slices per partition, ``streams.ship.moab.MoabShipper.send_batch``), with the
publisher's watermark markers every ``worker.marker_interval`` (ts: the latest iteration's
time) and one round when it stops.

Commands run without a shell, with a timeout, and their output is read as it comes with a cap
(``bounds.max_snapshot_bytes``, :func:`run_capped`): a command that prints more is killed and
its snapshot refused (:class:`SnapshotTooLarge`), counted and skipped at once (taking it again
would print as much), so memory stays bounded by the cap whatever a client prints. A snapshot
is whole or nothing: when a command fails, times out or prints what cannot be read, the whole
snapshot is taken again (up to ``retries`` more times) and, if it still fails, the iteration
is skipped and counted — never a partial iteration. Each iteration is stamped with the time
its first command started.

``text``: ``scontrol --all --oneliner show node``, ``squeue --format=%i|%T|%S|%Y|%N``,
``scontrol --oneliner show reservation``; ``json``: the ``--json`` forms (Slurm 23.02+;
``scontrol`` has no ``--json`` before). Options go before scontrol's command, as its manual
writes them. ``auto`` asks ``scontrol --version`` once and picks json from 23.02.
"""

from __future__ import annotations

import asyncio
import os
import re
import selectors
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
from streams.ship.base import ShipStats

FORMATS = ("auto", "text", "json")
log = logs.get("ship.slurm")
JSON_SINCE = (23, 2)  # first release with `scontrol --json show node`


MAX_SNAPSHOT_BYTES = 256 << 20  # bounds.max_snapshot_bytes's default
STDERR_KEPT = 64 << 10  # the end of a child's stderr kept for its error message
READ_BYTES = 1 << 16


class SnapshotFailed(RuntimeError):
    """One attempt at a snapshot failed: a command failed, timed out or printed garbage."""


class SnapshotTooLarge(SnapshotFailed):
    """A command printed more than the cap: it was killed and its output dropped."""


def run_capped(
    argv: Sequence[str],
    timeout: float,
    max_bytes: int,
    env: dict[str, str] | None = None,
    into: IO[bytes] | None = None,
    what: str | None = None,
) -> bytearray:
    """stdout of ``argv`` (no shell), read as it comes: into ``into`` (then nothing is kept),
    else kept and returned. Rule: memory is bounded by ``max_bytes`` whatever the child prints:
    past ``max_bytes`` of stdout the child is killed and :class:`SnapshotTooLarge` raised;
    only the last ``STDERR_KEPT`` bytes of its stderr are kept. :class:`SnapshotFailed` on a
    non-zero exit, a timeout (the child killed) or a command that cannot be started; ``what``
    names the command in their messages (default: its first words)."""
    pipe, null = subprocess.PIPE, subprocess.DEVNULL
    try:
        p = subprocess.Popen(list(argv), stdin=null, stdout=pipe, stderr=pipe, env=env)
    except OSError as e:
        raise SnapshotFailed(f"{argv[0]}: {e.strerror or e}") from None
    assert p.stdout is not None and p.stderr is not None
    out, err = bytearray(), bytearray()
    n = 0
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    try:
        sel.register(p.stdout, selectors.EVENT_READ, True)
        sel.register(p.stderr, selectors.EVENT_READ, False)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise SnapshotFailed(f"{what or argv[0]} timed out after {timeout:g} s")
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, READ_BYTES)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif not key.data:
                    err += chunk
                    del err[:-STDERR_KEPT]
                else:
                    n += len(chunk)
                    if n > max_bytes:
                        raise SnapshotTooLarge(
                            f"{what or argv[0]} printed more than {max_bytes:,} bytes "
                            "(bounds.max_snapshot_bytes): killed, its output refused"
                        )
                    if into is None:
                        out += chunk
                    else:
                        into.write(chunk)
        try:
            code = p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise SnapshotFailed(f"{what or argv[0]} timed out after {timeout:g} s") from None
    finally:
        sel.close()
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
    if code != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        last = lines[-1] if lines else "(no message)"
        raise SnapshotFailed(f"{what or ' '.join(argv[:3])} exited {code}: {last}")
    return out


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
    max_bytes: int = MAX_SNAPSHOT_BYTES  # a command's output, at most (bounds.max_snapshot_bytes)

    def run(self, argv: Sequence[str]) -> str:
        """stdout of ``argv`` (:func:`run_capped`: no shell, a timeout, at most ``max_bytes``)."""
        return run_capped(argv, self.timeout, self.max_bytes, self.env).decode("utf-8", "replace")

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
            rsv = (
                parse_reservations_json(
                    cmds.run([sc, "--json", "show", "reservation"]), ts_ms / 1000, mh
                )
                if cmds.reservations
                else []
            )
        else:
            nodes = parse_scontrol_nodes(cmds.run([sc, "--all", "--oneliner", "show", "node"]))
            out = cmds.run([sq, "--all", "--array", f"--format={SQUEUE_FORMAT}"])
            jobs = parse_squeue_text(out, SQUEUE_FORMAT, mh)
            rsv = (
                parse_reservations_text(cmds.run([sc, "--oneliner", "show", "reservation"]), mh)
                if cmds.reservations
                else []
            )
    except SlurmOutputError as e:
        raise SnapshotFailed(f"unreadable Slurm output ({e})") from None
    if not nodes:
        raise SnapshotFailed("scontrol listed no node")
    return slurm_iteration(ts_ms, nodes, jobs, rsv, cmds.planned_flag)


def record_json(r: Any) -> bytes:
    """A NodeStatus as the JSON line ``--dry-run`` prints."""
    return orjson.dumps(
        {
            "ts": instant_ms(r.ts_ms),
            "node": r.node,
            "state": r.state,
            "rsvlist": list(r.rsvlist),
            "joblist": list(r.joblist),
        }
    )


class SlurmShipper:
    """Snapshots -> a publisher (a MoabShipper, or ``None`` for --dry-run to ``out``): one
    every ``period`` seconds until stopped, or ``count`` of them."""

    def __init__(
        self,
        cmds: SlurmCommands,
        publisher: Any | None,
        out: IO[bytes] | None = None,
        retries: int = 2,
        retry_wait: float = 2.0,
        clock: Callable[[], float] = time.time,
        period: float = 60.0,
        count: int | None = None,
    ) -> None:
        self.cmds = cmds
        self.period, self.count = period, count
        self.publisher = publisher
        self.out = out
        self.retries = retries
        self.retry_wait = retry_wait
        self.clock = clock
        self.form: str | None = None
        self.stats = ShipStats()

    async def snapshot(self) -> SlurmIteration | None:
        """A whole snapshot, tried ``1 + retries`` times; None (counted) when every try failed."""
        for attempt in range(self.retries + 1):
            try:
                if self.form is None:
                    self.form = await asyncio.to_thread(self.cmds.resolved_form)
                return await asyncio.to_thread(take_snapshot, self.cmds, self.form, self.clock)
            except SnapshotTooLarge as e:  # taking it again would print as much
                self.stats.refused_snapshots += 1
                self.stats.last_error = str(e)
                log.warning("snapshot refused, iteration skipped: %s", e)
                break
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

    async def run(
        self,
        stop: asyncio.Event | None = None,
        *,
        period: float | None = None,
        count: int | None = None,
    ) -> None:
        """A snapshot every ``period`` seconds (on a fixed grid from the first; an overrun skips
        to the next tick) until ``stop`` is set or ``count`` iterations were attempted (both
        the shipper's unless given)."""
        period = self.period if period is None else period
        count = self.count if count is None else count
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

    async def last_markers(self) -> None:
        """The publisher's round when the shipper stops (none for --dry-run)."""
        if self.publisher is not None:
            await self.publisher.mark(force=True)

    def summary(self) -> str:
        s = self.stats
        flags = ", ".join(f"{k}={v}" for k, v in sorted(s.unknown_flags.items())) or "none"
        return (
            f"{s.iterations:,} iterations, {s.records:,} records in {s.messages:,} messages, "
            f"{s.skipped_iterations:,} skipped, {s.refused_snapshots:,} refused as larger than "
            f"bounds.max_snapshot_bytes, {s.failed_attempts:,} failed attempts, "
            f"{s.publish_failures:,} not acknowledged, {s.planned_unnamed:,} planned nodes "
            f"without a job, unknown flags: {flags}"
        )

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
