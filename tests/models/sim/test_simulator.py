"""Simulator glue: Moab line format, timestamps, job events, SWF replay selection."""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np
import orjson
import pytest

from models.formats.moab import parse_moab_chunk
from models.formats.swf import parse_swf_job
from models.records.jobevent import parse_jobevent_line
from models.records.nodestatus import (
    BUSY,
    DOWN,
    DRAINED,
    DRAINING,
    IDLE,
    KNOWN_STATES,
    Codebook,
)
from models.sim.lublin import LublinModel
from models.sim.scheduler import EasyScheduler, NodeInterval, Workload
from models.sim.simulator import (
    MoabFormatter,
    SimConfig,
    random_outages,
    simulate,
    workload_from_lublin,
    workload_from_swf,
)

MOAB_RE = re.compile(
    r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4}) (\d+) INFO  Node '([^']+)' status: "
    r"state='(Idle|Busy|Running|Down|Drained|Draining)' rsvlist='([^']*)' joblist='([^']*)'$"
)

START = datetime(2014, 12, 31, tzinfo=ZoneInfo("America/Chicago")).timestamp()


def _ts(s: str) -> float:
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def _small(days=0.5, nodes=16, seed=3, period=60.0, **kw):
    cfg = SimConfig(nodes=nodes, days=days, start=START, period=period, seed=seed, **kw)
    return cfg, workload_from_lublin(LublinModel(nodes, seed), cfg)


def test_lines_match_the_moab_format_and_times_increase():
    cfg, w = _small()
    chunks = list(simulate(w, cfg, random_outages(cfg, 2, 2)))
    lines = [ln for c in chunks for ln in c.moab.splitlines()]
    assert len(lines) == 16 * 720 == sum(c.n_lines for c in chunks)
    prev = -1.0
    seen_states = set()
    for k, ln in enumerate(lines):
        m = MOAB_RE.match(ln)
        assert m, ln
        ts = _ts(m.group(1))
        assert m.group(1).endswith("-0600")
        assert ts >= prev  # increasing within an iteration and across iterations
        prev = ts
        it, node = divmod(k, 16)
        assert m.group(3) == str(node + 1)
        assert START + it * 60 <= ts < START + it * 60 + 2.0
        seen_states.add(m.group(4))
        if m.group(4) in ("Idle", "Down", "Drained"):
            assert m.group(6) == "none"
        else:
            assert m.group(6) != "none"
    assert {"Idle", "Busy"} <= seen_states
    first = MOAB_RE.match(lines[0])
    assert first.group(1).startswith("2014-12-31T00:00:0")


def test_daylight_saving_offset_in_lines():
    start = datetime(2015, 3, 8, 1, 50, tzinfo=ZoneInfo("America/Chicago")).timestamp()
    cfg = SimConfig(nodes=2, days=1 / 24, start=start, period=600.0, warmup=0.0)
    w = Workload([], np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))
    lines = [ln for c in simulate(w, cfg) for ln in c.moab.splitlines()]
    offs = [MOAB_RE.match(ln).group(1)[-5:] for ln in lines]
    assert offs[0] == "-0600" and offs[-1] == "-0500"  # 02:00 CST -> 03:00 CDT


def test_job_events_are_consistent_with_the_log():
    cfg, w = _small(days=1.0)
    chunks = list(simulate(w, cfg))
    events = [parse_jobevent_line(e.to_json()) for c in chunks for e in c.events]
    by_job: dict[str, dict] = {}
    for e in events:
        by_job.setdefault(e.job, {})[e.type] = e
    assert len(by_job) == len(w)
    for d in by_job.values():
        s = d["submit"]
        assert s.user and s.nodes >= 1 and s.req_walltime >= 60
        if "start" in d:
            st = d["start"]
            assert st.ts >= s.ts and st.backfill in (True, False)
            assert len(st.node_list) == s.nodes
        if "end" in d:
            assert d["end"].ts >= d["start"].ts
            assert d["end"].ts - d["start"].ts <= s.req_walltime + 1e-6
    assert any(d["start"].backfill for d in by_job.values() if "start" in d)
    # every job id in a joblist is a started job; every reserved id a submitted one
    started = {j for j, d in by_job.items() if "start" in d}
    for c in chunks:
        for ln in c.moab.splitlines():
            m = MOAB_RE.match(ln)
            if m.group(6) != "none":
                assert m.group(6) in started
            for r in m.group(5).split(","):
                assert r == "none" or r in by_job


def test_events_json_has_the_agreed_fields():
    cfg, w = _small(days=0.2)
    evs = [orjson.loads(e.to_json()) for c in simulate(w, cfg) for e in c.events]
    start = next(e for e in evs if e["type"] == "start")
    assert set(start) >= {
        "type",
        "ts",
        "job",
        "user",
        "nodes",
        "req_walltime",
        "node_list",
        "backfill",
    }


def test_deterministic():
    a = [c.moab for c in simulate(*reversed(_small(days=0.2)))]
    b = [c.moab for c in simulate(*reversed(_small(days=0.2)))]
    assert a == b


def test_outages_show_in_lines():
    cfg = SimConfig(nodes=4, days=0.1, start=START, period=60.0, warmup=0.0)
    w = Workload(["1"], np.array([START]), np.array([2]), np.array([3000.0]), np.array([3600.0]))
    outs = [
        NodeInterval(0, START + 600, START + 1200, "down"),
        NodeInterval(3, START + 300, START + 4000, "drain"),
    ]
    lines = [ln for c in simulate(w, cfg, outs) for ln in c.moab.splitlines()]
    st = [MOAB_RE.match(ln).group(4) for ln in lines]
    by_iter = [st[i : i + 4] for i in range(0, len(st), 4)]
    assert by_iter[0] == ["Busy", "Busy", "Idle", "Idle"]
    assert by_iter[6] == ["Busy", "Busy", "Idle", "Drained"]  # t=360
    assert by_iter[11] == ["Down", "Idle", "Idle", "Drained"]  # t=660: job killed
    assert by_iter[21] == ["Idle", "Idle", "Idle", "Drained"]


def test_swf_selection():
    cfg = SimConfig(nodes=8, days=1.0, start=START, warmup=0.0)
    lines = [
        "1 0 0 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1",
        "2 10 0 100 16 -1 -1 16 200 -1 1 3 1 -1 -1 -1 -1 -1",  # too big
        "3 20 0 -1 2 -1 -1 2 200 -1 5 3 1 -1 -1 -1 -1 -1",  # no run time
        "4 30 0 50 -1 -1 -1 2 -1 -1 1 -1 1 -1 -1 -1 -1 -1",  # no requested time: use run time
        "5 90000 0 50 1 -1 -1 1 60 -1 1 3 1 -1 -1 -1 -1 -1",  # after the window
    ]
    w, sel = workload_from_swf((parse_swf_job(x) for x in lines), cfg)
    assert w.job_id == ["1000001", "1000004"]
    assert w.nodes.tolist() == [4, 2] and w.req_walltime.tolist() == [200.0, 50.0]
    assert w.submit.tolist() == [START, START + 30]
    assert w.user == ["user003", "unknown"]
    assert sel.used == 2 and dict(sel.skipped) == {"larger_than_machine": 1, "missing_runtime": 1}


def test_jobs_larger_than_machine_raise():
    cfg = SimConfig(nodes=2, days=0.1, start=START)
    w = Workload(["1"], np.array([START]), np.array([3]), np.array([1.0]), np.array([1.0]))
    with pytest.raises(ValueError):
        list(simulate(w, cfg))


def test_state_codes_round_trip_through_the_moab_parser():
    """One node-state scheme: the names the simulator writes parse back to the codes the
    scheduler produced (models.records.nodestatus's codes, via KNOWN_STATES)."""
    cfg, w = _small(days=0.5)
    sched = EasyScheduler(cfg.nodes, w, random_outages(cfg, 3, 3), depth=cfg.depth)
    fmt = MoabFormatter([str(i + 1) for i in range(cfg.nodes)], cfg.tz, 1234, cfg.seed, cfg.period)
    book = Codebook()
    seen: set[int] = set()
    for _events, iteration in sched.run(cfg.start, cfg.end, cfg.period):
        if iteration is None:
            continue
        parsed = parse_moab_chunk(fmt.format(iteration).encode(), book)
        assert not parsed.rejects and parsed.ignored == 0
        assert parsed.batch.state.tolist() == iteration.state.tolist()
        seen.update(iteration.state.tolist())
    assert {IDLE, BUSY, DOWN} <= seen and seen & {DRAINED, DRAINING}
    assert book.states.names == list(KNOWN_STATES)  # no state outside the known six


def test_waiting_wide_job_start_event_carries_reserved_start():
    # 4 nodes: J0 (2 nodes, asks 100 s, runs 60) from the start; wide J1 (4 nodes) submitted
    # 10 s later waits: EASY reserves all 4 nodes at start + 100 (J0's requested end), J1 starts
    # at start + 60 when J0 ends early. Its start event carries reserved_start = start + 100,
    # its submit none (the reservation did not exist yet); J0 never waited, so none either.
    cfg = SimConfig(nodes=4, days=0.01, start=START, period=30.0, seed=1, warmup=0.0)
    w = Workload(
        job_id=["J0", "J1"],
        submit=np.array([START, START + 10.0]),
        nodes=np.array([2, 4], dtype=np.int64),
        runtime=np.array([60.0, 50.0]),
        req_walltime=np.array([100.0, 50.0]),
    )
    evs = [e for ch in simulate(w, cfg) for e in ch.events]
    by = {(e.job, e.type): e for e in evs}
    assert by["J1", "start"].ts == START + 60.0
    assert by["J1", "start"].reserved_start == START + 100.0
    assert by["J1", "submit"].reserved_start is None
    assert by["J0", "start"].reserved_start is None
    # round trip through the JSON lines jobs.jsonl holds
    back = parse_jobevent_line(by["J1", "start"].to_json())
    assert back == by["J1", "start"]


def test_simulated_reservations_deterministic():
    cfg, w = _small(days=0.5, nodes=16, seed=3)
    a = [e.to_json() for ch in simulate(w, cfg) for e in ch.events]
    b = [e.to_json() for ch in simulate(w, cfg) for e in ch.events]
    assert a == b
    rsv = [orjson.loads(x) for x in a if b'"reserved_start"' in x]
    assert rsv and all(d["type"] == "start" for d in rsv)
    # no outages: EASY never starts a reserved job after its reservation (ends come early)
    assert all(d["ts"] <= d["reserved_start"] for d in rsv)
