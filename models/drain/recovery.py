"""Back-fill recovery and job back-log (seed 000 §VI-A and §VI-B, Fullop).

§VI-A: "the total node-hours of back-fill jobs could be compared to the total node-hours of
back-fill plus the total node hours of drain to determine back-fill efficiency":

    efficiency = backfill / (backfill + drain)   per window, in node-time.

It needs a source that says which jobs were backfilled (sacct ``Flags``, the simulator's job
events); without one it is unknown, never 0. Backfill node-time is each backfilled job's nodes x
the part of [start, end) inside the window (a job still running counts up to the end of the
input), so it adds up over windows like drain does.

§VI-B: "Using the unallocated idle time ... one could begin to assess the available backlog of
scheduled jobs ... to determine if the lack of node-occupancy is due to scheduler inefficiencies
or due to the lack of suitable workload." Per window: the unallocated idle node-time beside the
queue (jobs between submit and start; cancelled ones until their end), and a first
classification, ours (the seed leaves it open): ``no_idle`` (no unallocated idle node-time),
``no_backlog`` (idle, nothing queued: lack of workload), ``backlog_fits`` (the smallest job queued
in the window needs no more nodes than the window's mean unallocated idle nodes: the scheduler
left room it could have used, or was holding it for a reason the log does not show),
``backlog_too_large`` (every queued job needs more nodes than were idle: lack of suitable
workload). All sums are exact integer node-milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models.drain.accountant import split_at_edges

VERDICTS = ("no_idle", "no_backlog", "backlog_fits", "backlog_too_large")


@dataclass(slots=True, frozen=True)
class Span:
    """A job's interval [start_ms, end_ms) on ``nodes`` nodes."""

    start_ms: int
    end_ms: int
    nodes: int


def _pieces(spans: Sequence[Span], edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every non-empty span cut at the window edges: (window, length ms, nodes) per piece, one
    piece per span and window it touches (the edges must cover the spans)."""
    live = [s for s in spans if s.end_ms > s.start_ms and s.nodes > 0]
    start = np.array([s.start_ms for s in live], dtype=np.int64)
    end = np.array([s.end_ms for s in live], dtype=np.int64)
    nodes = np.array([s.nodes for s in live], dtype=np.int64)
    i, w, _, length = split_at_edges(start, end, edges)
    return w, length, nodes[i]


def node_ms_per_window(spans: Sequence[Span], edges: np.ndarray) -> np.ndarray:
    """Node-milliseconds of ``spans`` inside each window [edges[i], edges[i+1]) (exact int64;
    the edges must cover the spans)."""
    out = np.zeros(max(edges.size - 1, 0), dtype=np.int64)
    w, length, nodes = _pieces(spans, edges)
    np.add.at(out, w, length * nodes)
    return out


@dataclass(slots=True, frozen=True)
class BackfillWindow:
    start_ms: int
    backfill_node_ms: int
    drain_node_ms: int

    @property
    def efficiency(self) -> float | None:
        """backfill / (backfill + drain); None when the window had neither."""
        tot = self.backfill_node_ms + self.drain_node_ms
        return None if tot == 0 else self.backfill_node_ms / tot


def backfill_efficiency(
    starts_ms: Sequence[int], drain_ms: Sequence[int], backfill: Sequence[Span], edges: np.ndarray
) -> list[BackfillWindow]:
    """One row per window start in ``starts_ms`` (with its drain node-ms), its backfill node-ms
    from the backfilled jobs' spans."""
    bf = node_ms_per_window(backfill, edges)
    idx = np.searchsorted(edges, np.asarray(starts_ms, dtype=np.int64))
    return [
        BackfillWindow(int(s), int(bf[i]) if i < bf.size else 0, int(d))
        for s, d, i in zip(starts_ms, drain_ms, idx.tolist(), strict=True)
    ]


@dataclass(slots=True, frozen=True)
class BacklogWindow:
    start_ms: int
    length_ms: int
    idle_unallocated_node_ms: int
    queued_job_ms: int  # sum over queued jobs of their queued time in the window
    queued_node_ms: int  # the same, times each job's nodes
    jobs_queued: int  # distinct jobs queued at some time in the window
    smallest_queued_nodes: int | None

    @property
    def mean_idle_nodes(self) -> float:
        return self.idle_unallocated_node_ms / self.length_ms

    @property
    def verdict(self) -> str:
        if self.idle_unallocated_node_ms == 0:
            return "no_idle"
        if self.jobs_queued == 0:
            return "no_backlog"
        # smallest <= idle_ms / length, in integers: smallest x length <= idle_ms
        if self.smallest_queued_nodes is not None and (
            self.smallest_queued_nodes * self.length_ms <= self.idle_unallocated_node_ms
        ):
            return "backlog_fits"
        return "backlog_too_large"


def backlog(
    starts_ms: Sequence[int],
    lengths_ms: Sequence[int],
    idle_ms: Sequence[int],
    queued: Sequence[Span],
    edges: np.ndarray,
) -> list[BacklogWindow]:
    """One row per window (start, length, unallocated idle node-ms) with the queue beside it;
    ``queued`` spans are [submit, start) of each job (nodes: its request)."""
    nw = max(edges.size - 1, 0)
    job_ms = np.zeros(nw, dtype=np.int64)
    node_ms = np.zeros(nw, dtype=np.int64)
    count = np.zeros(nw, dtype=np.int64)
    smallest = np.full(nw, np.iinfo(np.int64).max, dtype=np.int64)
    w, length, nodes = _pieces(queued, edges)
    np.add.at(job_ms, w, length)
    np.add.at(node_ms, w, length * nodes)
    np.add.at(count, w, 1)  # a job has one piece per window it is queued in
    np.minimum.at(smallest, w, nodes)
    idx = np.searchsorted(edges, np.asarray(starts_ms, dtype=np.int64))
    out = []
    for s, n, idle, k in zip(starts_ms, lengths_ms, idle_ms, idx.tolist(), strict=True):
        inside = k < nw
        c = int(count[k]) if inside else 0
        out.append(
            BacklogWindow(
                int(s),
                int(n),
                int(idle),
                int(job_ms[k]) if inside else 0,
                int(node_ms[k]) if inside else 0,
                c,
                int(smallest[k]) if c else None,
            )
        )
    return out
