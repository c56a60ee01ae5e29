"""The live samples stages' durable state (models/samples: merger, DFS load, per-file-system
load, per-job utilisation): a run fed samples A, saved as ``snapshot`` -> ``models.state.pack``,
read back with ``unpack`` -> ``restore`` into objects freshly built from their configuration and
fed B gives every output (final minutes, hot zones, alerts, utilisation rows, late samples) a
run fed A then B without the round trip gives; a tree with wrong types is refused."""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.records.nodesample import NodeSample
from models.samples.batch import SampleBatch
from models.samples.dfslive import DfsStream, FsStreams
from models.samples.merge import SampleMerger
from models.samples.utillive import JobUtilStream
from models.state import StateFormatError, pack, unpack

T0 = 1_700_000_040.0  # a minute's start
MB = 1_000_000
PERIOD = 60.0
THRESHOLD = 30.0  # MB/s over the cluster: the hot job's minutes are above it
FS_THRESHOLDS = {"scratch": 20.0}  # alerts.hot_zone_fs; "home" takes THRESHOLD
MPC = 4.0 * 1024 * 1024  # mem_per_core (KiB)
CPN = 8.0  # cores_per_node
_BLANK = NodeSample(0.0, "", 0, "", "app", 1, 1, 0, 0, 0, 0, 0, 0, 0.0, 0, 0)


def _sample(**fields: Any) -> NodeSample:
    """A sample with ``fields`` (NodeSample's names), the others blank."""
    return replace(_BLANK, **fields)


def _roundtrip(tree: dict[str, Any]) -> dict[str, Any]:
    """``tree`` through a state document, as the worker saves and reads it."""
    version, back = unpack(pack("samples", 1, tree), "samples", {1})
    assert version == 1 and isinstance(back, dict)
    return back


def _restored(build: Callable[[], Any], saved: Any) -> Any:
    """A fresh object restored from ``saved``'s snapshot, checked to save the same tree."""
    tree = _roundtrip(saved.snapshot())
    fresh = build()
    fresh.restore(tree)
    _same_tree(_roundtrip(fresh.snapshot()), tree)
    return fresh


def _same_tree(got: Any, want: Any, at: str = "") -> None:
    """Equal trees: arrays of the same dtype, shape and bytes; other values of the same type
    and repr (floats to the bit)."""
    assert type(got) is type(want), at
    if isinstance(want, dict):
        assert list(got) == list(want), at
        for k in want:
            _same_tree(got[k], want[k], f"{at}/{k}")
    elif isinstance(want, list):
        assert len(got) == len(want), at
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same_tree(g, w, f"{at}/{i}")
    elif isinstance(want, np.ndarray):
        assert (got.dtype, got.shape) == (want.dtype, want.shape), at
        assert got.tobytes() == want.tobytes(), at
    else:
        assert repr(got) == repr(want), at


# ---- workloads -------------------------------------------------------------------------------


@dataclass
class Workload:
    samples: list[NodeSample]  # in time order
    messages: list[tuple[int, int, SampleBatch]]  # (partition, offset, sweep) as delivered
    cut: int  # messages before it are A
    lateness: float
    partitions: int


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    """Jobs on nodes, each process sampled every minute (a node's sweep at its own second);
    job J0 writes hard over minutes ``h0..h1-1`` (a hot-zone episode; on ``scratch`` too when
    it gives per-file-system speeds); counters that restart; jobs that end early; processes
    that start inside the trace; sweeps delivered late or twice; the cut in the hot minutes or
    anywhere."""
    minutes = draw(st.integers(8, 14))
    h0 = draw(st.integers(1, 3))
    h1 = h0 + draw(st.integers(2, 5))
    n_jobs = draw(st.integers(2, 3))
    rng = random.Random(draw(st.integers(0, 2**32)))
    second = [draw(st.integers(0, 59)) for _ in range(5)]  # each node's sweep time
    samples = []
    pid = 100
    for j in range(n_jobs):
        job = f"J{j}"
        nodes = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True))
        first = 0 if j == 0 else draw(st.integers(0, 2))
        end = minutes if j == 0 else draw(st.integers(first + 1, minutes))
        fs = draw(st.booleans())
        for node in nodes:
            for _k in range(draw(st.integers(1, 2))):
                pid += 1
                start = T0 + 60 * first - (10 if rng.random() < 0.5 else 1000)
                written = read = rng.randrange(0, 10**6)
                for m in range(first, end):
                    hot = j == 0 and h0 <= m < h1
                    rate = 45.0 if hot else 0.5  # MB/s of this process
                    written += round(rate * MB * 60) + rng.randrange(0, 1000)
                    read += rng.randrange(0, 10**7)
                    if rng.random() < 0.05:
                        written = rng.randrange(0, 10**6)  # the counter restarted
                    rates: tuple[tuple[str, float, float], ...] = ()
                    if fs:
                        rates = (("home", rng.uniform(0, 2), 0.5), ("scratch", rate * 0.8, 0.25))
                    ts = T0 + 60 * m + second[node] + rng.choice([0.0, 0.5])
                    s = _sample(
                        ts=ts,
                        job=job,
                        pid=pid,
                        node=f"n{node}",
                        vm_rss_kb=rng.randrange(10**7),
                        vm_swap_kb=rng.randrange(10**4),
                        read_bytes=read,
                        write_bytes=written,
                        core=rng.uniform(0, 400),
                        start=start,
                        cores=rng.choice([0, 4, 8]),
                        fs_rates=rates,
                    )
                    samples.append(s)
    samples.sort(key=lambda s: (s.ts, s.node, s.pid))
    # one message per node sweep, partition by node; some delivered later, some twice
    partitions = draw(st.integers(1, 3))
    sweeps: dict[tuple[float, str], list[NodeSample]] = {}
    for s in samples:
        sweeps.setdefault((s.ts, s.node), []).append(s)
    order = list(sweeps)
    for i in range(len(order)):
        if rng.random() < 0.08:  # held back a few sweeps
            k = min(len(order) - 1, i + rng.randrange(1, 12))
            order.insert(k, order.pop(i))
    offsets = dict.fromkeys(range(partitions), 0)
    messages: list[tuple[int, int, SampleBatch]] = []
    for key in order:
        p = int(key[1][1:]) % partitions
        b = SampleBatch.from_samples(sweeps[key])
        b, _head = SampleBatch.from_bytes(b.to_bytes({}))  # as the combiner reads it
        messages.append((p, offsets[p], b))
        offsets[p] += 1
        if rng.random() < 0.05:  # an earlier message sent again
            messages.append(rng.choice(messages))
    if draw(st.booleans()):  # in the hot minutes, the episode open
        c = T0 + 60 * draw(st.integers(h0 + 1, h1 + 2))
        cut = next((i for i, (_p, _o, b) in enumerate(messages) if b.ts[0] >= c), len(messages))
    else:
        cut = draw(st.integers(0, len(messages)))
    lateness = draw(st.sampled_from([0.0, 30.0, 60.0, 90.0]))
    return Workload(samples, messages, cut, lateness, partitions)


def _chunks(samples: list[NodeSample], sizes: list[int]) -> list[list[NodeSample]]:
    out, i, k = [], 0, 0
    while i < len(samples):
        j = min(len(samples), i + sizes[k % len(sizes)])
        out.append(samples[i:j])
        i, k = j, k + 1
    return out


# ---- one object: fed A, round trip, fed B ----------------------------------------------------


def _ab(
    build: Callable[[], Any], steps: list[Callable[[Any, list[Any]], None]], cut: int
) -> tuple[list[Any], list[Any]]:
    """Outputs of ``steps`` on one object, and on one saved after ``steps[:cut]`` and restored
    into a fresh one for the rest."""
    want: list[Any] = []
    one = build()
    for step in steps:
        step(one, want)
    got: list[Any] = []
    a = build()
    for step in steps[:cut]:
        step(a, got)
    b = _restored(build, a)
    for step in steps[cut:]:
        step(b, got)
    return want, got


def _same(got: list[Any], want: list[Any]) -> None:
    """Equal outputs, floats to the bit (repr: NaN equals NaN, -0.0 is not 0.0)."""
    assert len(got) == len(want)
    assert repr(got) == repr(want)


def _merger_steps(w: Workload) -> list[Callable[[Any, list[Any]], None]]:
    def step(p: int, off: int, b: SampleBatch) -> Callable[[Any, list[Any]], None]:
        def run(m: SampleMerger, out: list[Any]) -> None:
            out.append(("late", b.take(m.add_many(p, off, b)).to_samples()))
            out.append(("released", m.release().to_samples(), m.released_to))

        return run

    def end(m: SampleMerger, out: list[Any]) -> None:
        out.append(("flush", m.flush().to_samples(), m.released_to, m.duplicates, m.late))

    return [*(step(*x) for x in w.messages), end]


@settings(max_examples=60, deadline=None)
@given(workloads())
def test_merger(w: Workload) -> None:
    want, got = _ab(lambda: SampleMerger(w.lateness, w.partitions), _merger_steps(w), w.cut)
    _same(got, want)
    assert sum(len(x[1]) for x in want if x[0] == "late") == want[-1][-1]


def _dfs_steps(
    chunks: list[list[NodeSample]], fs: bool = False
) -> list[Callable[[Any, list[Any]], None]]:
    def step(k: int) -> Callable[[Any, list[Any]], None]:
        def run(s: Any, out: list[Any]) -> None:
            s.update(chunks[k])
            if k + 1 < len(chunks):
                out.append(s.close(math.floor(chunks[k + 1][0].ts / 60)))
            else:
                out.append(s.finish())
            if not fs:
                out.append(sorted((j, s.io_of(j)) for j in s.job_io))

        return run

    return [step(k) for k in range(len(chunks))]


@settings(max_examples=60, deadline=None)
@given(workloads(), st.lists(st.integers(1, 12), min_size=1, max_size=4), st.data())
def test_dfs_stream(w: Workload, sizes: list[int], data: st.DataObject) -> None:
    chunks = _chunks(w.samples, sizes)
    cut = data.draw(st.integers(0, len(chunks)))
    # a short forget time: processes leave memory and come back as baselines across the cut
    forget = data.draw(st.sampled_from([300.0, 6 * 3600.0]))
    gap = data.draw(st.integers(0, 1))

    def build() -> DfsStream:
        return DfsStream(PERIOD, 1e6, THRESHOLD, 3, gap, 2, forget_s=forget)

    want, got = _ab(build, _dfs_steps(chunks), cut)
    _same(got, want)


@settings(max_examples=60, deadline=None)
@given(workloads(), st.lists(st.integers(1, 12), min_size=1, max_size=4), st.data())
def test_fs_streams(w: Workload, sizes: list[int], data: st.DataObject) -> None:
    chunks = _chunks(w.samples, sizes)
    cut = data.draw(st.integers(0, len(chunks)))

    def build() -> FsStreams:
        return FsStreams(FS_THRESHOLDS, THRESHOLD, period=PERIOD, alert_minutes=2)

    want, got = _ab(build, _dfs_steps(chunks, fs=True), cut)
    _same(got, want)


@settings(max_examples=60, deadline=None)
@given(workloads(), st.lists(st.integers(1, 12), min_size=1, max_size=4), st.data())
def test_util_stream(w: Workload, sizes: list[int], data: st.DataObject) -> None:
    chunks = _chunks(w.samples, sizes)
    cut = data.draw(st.integers(0, len(chunks)))
    mpc = data.draw(st.sampled_from([MPC, None]))
    cpn = data.draw(st.sampled_from([CPN, None]))

    def step(k: int) -> Callable[[Any, list[Any]], None]:
        def run(u: JobUtilStream, out: list[Any]) -> None:
            u.update(chunks[k])
            until = chunks[k + 1][0].ts if k + 1 < len(chunks) else math.inf
            changed, final = u.close(until)
            rows = [(u.row(j, (1.0, 2.0)), u.first_ts(j), j in final) for j in changed]
            out.append((changed, final, rows))
            u.forget(final)

        return run

    steps = [step(k) for k in range(len(chunks))]
    want, got = _ab(lambda: JobUtilStream(PERIOD, mpc, cpn, w.lateness), steps, cut)
    _same(got, want)


# ---- all of them as the live path drives them (streams/live/samples.py) ----------------------


@dataclass
class Live:
    """The samples path's merger and stages, built as ``SamplesPipeline._state`` and ``_fs``
    build them from settings."""

    lateness: float
    partitions: int
    merger: SampleMerger = field(init=False)
    dfs: DfsStream = field(init=False)
    util: JobUtilStream = field(init=False)
    fs: FsStreams = field(init=False)

    def __post_init__(self) -> None:
        self.merger = SampleMerger(self.lateness, self.partitions)
        self.dfs = DfsStream(PERIOD, 1e6, THRESHOLD, 3, 0, 2)
        self.util = JobUtilStream(PERIOD, MPC, CPN, self.lateness)
        self.fs = FsStreams(FS_THRESHOLDS, THRESHOLD, period=PERIOD, alert_minutes=2)

    def snapshot(self) -> dict[str, Any]:
        stages = {"merger": self.merger, "dfs": self.dfs, "util": self.util, "fs": self.fs}
        return {k: x.snapshot() for k, x in stages.items()}

    def restore(self, tree: dict[str, Any]) -> None:
        self.merger.restore(tree["merger"])
        self.dfs.restore(tree["dfs"])
        self.util.restore(tree["util"])
        self.fs.restore(tree["fs"])

    def take(self, p: int, off: int, b: SampleBatch, out: list[Any]) -> None:
        """``SamplesPipeline._take`` then ``_released`` of the merger's release."""
        out.append(("late", b.take(self.merger.add_many(p, off, b)).to_samples()))
        self.released(self.merger.release(), out)

    def released(self, released: SampleBatch, out: list[Any]) -> None:
        if not len(released):
            return
        self.dfs.update(released)
        assert self.merger.released_to is not None
        until = math.floor(self.merger.released_to / 60)
        out.append(("dfs", *self.dfs.close(until)))
        self.fs.update(released)
        out.append(("fs", self.fs.close(until)))
        self.util.update(released)
        changed, final = self.util.close(self.merger.released_to)
        done = set(final)
        for job in sorted(set(changed) | done):
            row = self.util.row(job, self.dfs.io_of(job))
            out.append(("util", row, self.util.first_ts(job), job in done))
        self.util.forget(final)
        self.dfs.forget_jobs(final)

    def end(self, out: list[Any]) -> None:
        """The rest: every held sample released, every minute and bucket final."""
        self.released(self.merger.flush(), out)
        out.append(("end", self.dfs.finish(), self.fs.finish(), self.util.close(math.inf)))
        out.append((self.merger.duplicates, self.merger.late, self.merger.released_to))


def _reloaded(live: Live) -> Live:
    """A fresh worker's stages, restored from what ``live`` saved."""
    return _restored(lambda: Live(live.lateness, live.partitions), live)


def _live(w: Workload, cut: int | None) -> list[Any]:
    """The outputs of the messages through the live path, saved and restored at ``cut``."""
    out: list[Any] = []
    live = Live(w.lateness, w.partitions)
    for k, (p, off, b) in enumerate(w.messages):
        if k == cut:
            live = _reloaded(live)
        live.take(p, off, b, out)
    if cut == len(w.messages):
        live = _reloaded(live)
    live.end(out)
    return out


@settings(max_examples=80, deadline=None)
@given(workloads())
def test_all_stages_as_the_live_path_drives_them(w: Workload) -> None:
    want = _live(w, None)
    got = _live(w, w.cut)
    _same(got, want)
    assert any(x[0] == "util" for x in want)


def _hot_workload() -> Workload:
    """A fixed trace whose hot-zone episode (and its alert) is open at the cut."""
    rng = random.Random(7)
    samples = []
    for m in range(12):
        for node in range(3):
            job = "J0" if node == 0 else "J1"
            hot = job == "J0" and 3 <= m < 8
            w = (m + 1) * (45 if hot else 1) * MB * 60
            rates = (("scratch", 45.0 if hot else 0.5, 0.0),) if node < 2 else ()
            s = _sample(
                ts=T0 + 60 * m + node,
                job=job,
                pid=10 + node,
                node=f"n{node}",
                vm_rss_kb=rng.randrange(10**6),
                write_bytes=w,
                core=90.0,
                start=T0 - 1000,
                cores=4,
                fs_rates=rates,
            )
            samples.append(s)
    messages = [(i % 2, i // 2, SampleBatch.from_samples([s])) for i, s in enumerate(samples)]
    cut = next(i for i, (_p, _o, b) in enumerate(messages) if b.ts[0] >= T0 + 60 * 6)
    return Workload(samples, messages, cut, 0.0, 2)


def test_a_hot_zone_open_at_the_cut_ends_after_the_restore() -> None:
    w = _hot_workload()
    out: list[Any] = []
    live = Live(w.lateness, w.partitions)
    for p, off, b in w.messages[: w.cut]:
        live.take(p, off, b, out)
    assert live.dfs._ep is not None and live.dfs.book.open  # episode and alert open
    assert live.fs.streams["scratch"].book.open
    want = _live(w, None)
    got = _live(w, w.cut)
    _same(got, want)
    zones = [z for x in got if x[0] == "dfs" for z in x[2]]
    alerts = [a for x in got if x[0] == "dfs" for a in x[3]]
    assert [(z.start, z.end) for z in zones] == [(28333337, 28333341)]
    assert [a.state for a in alerts] == ["firing", "resolved"]
    assert alerts[1].details["top_jobs"][0][0] == "J0"


# ---- what a tree holds -------------------------------------------------------------------------


def test_a_batch_tree_keeps_columns_as_arrays_and_every_bit() -> None:
    rates = (("$home", 1.5, 0.25), ("x", 2.0, 0.0))
    one = _sample(
        ts=5.0,
        job="J1\x00",
        pid=1,
        node="n",
        vm_rss_kb=7,
        read_bytes=3,
        write_bytes=4,
        core=1.5,
        start=-0.0,
        cores=4,
        fs_rates=rates,
    )
    two = _sample(ts=6.0, job="é", pid=2, node="n2", vm_swap_kb=1, write_bytes=5, start=2.0)
    b = SampleBatch.from_samples([one, two])
    tree = b.to_tree()
    assert all(isinstance(tree[k], np.ndarray) for k in ("ts", "job", "write", "core"))
    back = SampleBatch.from_tree(_roundtrip(tree))
    assert back.to_samples() == b.to_samples()
    assert math.copysign(1.0, float(back.start[0])) == -1.0
    assert back.fs == {0: (("$home", 1.5, 0.25), ("x", 2.0, 0.0))}


def test_the_top_level_keys() -> None:
    w = _hot_workload()
    live = Live(w.lateness, w.partitions)
    out: list[Any] = []
    for p, off, b in w.messages[: w.cut]:
        live.take(p, off, b, out)
    tree = live.snapshot()
    merger = {"latest", "offsets", "released_to", "duplicates", "late", "held"}
    merger |= {"shippers", "newest_sent", "input_ended"}  # the shippers' markers
    assert set(tree["merger"]) == merger
    dfs = {"alerts", "procs", "minutes", "closed", "episode", "forget_at", "job_io"}
    assert set(tree["dfs"]) == dfs
    assert set(tree["util"]) == {"pending", "jobs"}
    assert set(tree["fs"]) == {"streams"}
    assert isinstance(tree["dfs"]["procs"]["last"], np.ndarray)


# ---- malformed trees -------------------------------------------------------------------------


def _saved() -> dict[str, Any]:
    w = _hot_workload()
    live = Live(w.lateness, w.partitions)
    out: list[Any] = []
    for p, off, b in w.messages[: w.cut + 3]:
        live.take(p, off, b, out)
    # per-job sums not yet final (quiet_s = lateness = 0 here forgets them at once) and samples
    # of open buckets
    fed = [x for _p, _o, b in w.messages[: w.cut + 3] for x in b.to_samples()]
    live.util.update(fed)
    live.util.close(fed[-1].ts)
    tree = _roundtrip(live.snapshot())
    assert live.merger.held and tree["dfs"]["episode"] is not None and tree["util"]["jobs"]["job"]
    return tree


def _set(tree: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    t = copy.deepcopy(tree)
    *head, last = path.split("/")
    at: Any = t
    for k in head:
        at = at[int(k)] if isinstance(at, list) else at[k]
    if value is _DELETE:
        del at[last]
    else:
        at[int(last) if isinstance(at, list) else last] = value
    return t


_DELETE = object()
_BAD = [
    ("merger", "released_to", "12"),
    ("merger", "duplicates", 1.5),
    ("merger", "late", True),
    ("merger", "latest", [[0]]),
    ("merger", "offsets", {"0": 3}),
    ("merger", "held/ts", [1.0, 2.0]),
    ("merger", "held/write", np.zeros(1, np.float64)),
    ("merger", "held/pid", np.zeros(10**3, np.int64)),
    ("merger", "held/job", np.full(1, 99, np.int64)),
    ("merger", "held/jobs", "J0"),
    ("merger", "held/fs/row", np.array([10**6])),
    ("merger", "held", _DELETE),
    ("dfs", "procs/last", np.zeros((2, 3))),
    ("dfs", "procs/pid", np.array(["1"])),
    ("dfs", "procs/node/codes", np.array([-1])),
    ("dfs", "minutes/rows", np.array([-1, 100])),
    ("dfs", "minutes/acc/bytes", np.zeros((1, 3))),
    ("dfs", "closed", 1.5),
    ("dfs", "episode/peak", "hot"),
    ("dfs", "episode/written/counts", np.array([5])),
    ("dfs", "alerts/0/value", "x"),
    ("dfs", "alerts/0/state", "resolved"),
    ("dfs", "alerts/0/details", {"top_jobs": [["J0", 1.0]], "code": "os.system"}),
    ("dfs", "job_io/top", np.zeros(50)),
    ("dfs", "job_io", None),
    ("util", "jobs/n", np.zeros(2, np.float64)),
    ("util", "jobs/job", ["J0", "J0"]),
    ("util", "jobs/cores_mem", np.zeros((1, 2))),
    ("util", "jobs/core/counts", np.array([-1, 1])),
    ("util", "pending/start", np.zeros(0)),
    ("fs", "streams/0/fs", 1),
    ("fs", "streams/0/state/minutes/acc/write/values", np.zeros(10**3)),
    ("fs", "streams", {"scratch": {}}),
]


@pytest.mark.parametrize(("stage", "path", "value"), _BAD, ids=[f"{s}/{p}" for s, p, _ in _BAD])
def test_a_tree_with_wrong_types_is_refused(stage: str, path: str, value: Any) -> None:
    tree = _saved()
    fresh = Live(0.0, 2)
    getattr(fresh, stage).restore(tree[stage])  # the tree as saved reads
    fresh = Live(0.0, 2)
    before = repr(getattr(fresh, stage).snapshot())
    with pytest.raises(StateFormatError):
        getattr(fresh, stage).restore(_set(tree, stage + "/" + path, value)[stage])
    assert repr(getattr(fresh, stage).snapshot()) == before  # nothing half set


def test_a_tree_that_is_not_a_mapping_is_refused() -> None:
    for obj in Live(0.0, 2).merger, Live(0.0, 2).dfs, Live(0.0, 2).util, Live(0.0, 2).fs:
        with pytest.raises(StateFormatError):
            obj.restore([])
