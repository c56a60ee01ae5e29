"""`drainwatch replay --format jobevents` -> release_forecast.csv (seed 001, Figure 9)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import settings as st_settings
from hypothesis import strategies as hst

from models.records.jobevent import JobEvent, JobEventError, parse_jobevent_line
from streams.cli import main
from streams.stages.release import ReleaseForecastStage
from streams.tables.jobs import RELEASE_FORECAST
from tests.reference_jobs import release_stage_ref


def T(hms: str) -> str:
    return f"2004-03-24T{hms}Z"


def hm(h: int, m: int, s: int = 0) -> float:
    return h * 3600.0 + m * 60 + s


def job(
    name: str,
    nodes: int,
    submit: str,
    start: str | None,
    end: str | None,
    wall: float | None,
    reserved: str | None = None,
) -> list[bytes]:
    d: dict[str, object] = {"job": name, "user": "rdx", "name": name, "nodes": nodes}
    if wall is not None:
        d["req_walltime"] = wall
    rsv = {} if reserved is None else {"reserved_start": T(reserved)}
    out = [orjson.dumps({"type": "submit", "ts": T(submit), **d, **rsv})]
    if start is not None:
        out.append(orjson.dumps({"type": "start", "ts": T(start), **d}))
    if end is not None:
        out.append(orjson.dumps({"type": "end", "ts": T(end), **d}))
    return out


def figure9_lines(fc_submit: str = "10:09:00", reserved: str | None = None) -> list[bytes]:
    """Figure 9 on 116 nodes: 66 in operational use, 2 free, three 16-node research jobs
    ending 10:13:34 (ehf9, taken as checkpointed then), 10:17 and 10:21; at 10:09 a 50-node
    job needs the 48 missing nodes; it starts at 10:21."""
    lines = job("ops", 66, "08:20:00", "08:20:00", None, 4 * 3600.0)
    lines += job("ehf9_model_fc", 16, "09:13:34", "09:13:34", "10:13:34", 3600.0)
    lines += job("ehht_ifstraj_uptraj_0", 16, "09:17:00", "09:17:00", "10:17:00", 3600.0)
    lines += job("ehba_ifstraj_uptraj_0", 16, "09:21:00", "09:21:00", "10:21:00", 3600.0)
    lines += job("fc", 50, fc_submit, "10:21:00", None, 1800.0, reserved)
    return sorted(lines, key=lambda b: orjson.loads(b)["ts"])


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_figure9_end_to_end(tmp_path: Path) -> None:
    src = tmp_path / "fig9.jsonl"
    src.write_bytes(b"\n".join(figure9_lines()) + b"\n")
    out = tmp_path / "out"
    argv = ["replay", "--format", "jobevents", str(src), "--out", str(out), "--nodes", "116"]
    assert main([*argv, "--no-progress"]) == 0
    rows = read_csv(out / "release_forecast.csv")
    fc = [r for r in rows if r["job"] == "fc"]
    assert [
        (r["holder_name"], r["holder_nodes"], r["free_after"], r["need_after"]) for r in fc
    ] == [
        ("ehf9_model_fc", "16", "18", "32"),
        ("ehht_ifstraj_uptraj_0", "16", "34", "16"),
        ("ehba_ifstraj_uptraj_0", "16", "50", "0"),
    ]
    assert {(r["need"], r["free"], r["missing"]) for r in fc} == {("50", "2", "48")}
    assert {float(r["late_by_s"]) for r in fc} == {720.0}  # ready 10:21, wanted 10:09
    assert {float(r["actual_late_s"]) for r in fc} == {720.0}
    assert fc[0]["ready_at"].startswith("2004-03-24") and "10:21" in fc[0]["ready_at"]
    ops = [r for r in rows if r["job"] == "ops"]
    assert len(ops) == 1 and ops[0]["step"] == "0" and ops[0]["holder_job"] == ""
    assert float(ops[0]["late_by_s"]) == 0.0 and float(ops[0]["actual_late_s"]) == 0.0
    s = json.loads((out / "summary_jobs.json").read_text())
    release = s["release"]
    assert release["forecasts"] == 5 and release["forecasts_late"] == 1
    assert release["max_late_by_s"] == 720.0 and release["forecasts_never_ready"] == 0


def ev(typ: str, ts: float, j: str, nodes: int, wall: float | None = None) -> JobEvent:
    return JobEvent(typ, ts, j, name=j, nodes=nodes, req_walltime=wall)


def test_stage_never_ready_unstarted_and_no_walltime() -> None:
    st = ReleaseForecastStage(10)
    out = list(
        st.step(
            [
                ev("start", 0.0, "a", 4, 100.0),
                ev("start", 0.0, "b", 4),  # no requested walltime: cannot be forecast
                ev("submit", 10.0, "big", 8),  # 2 free + a's 4 < 8: never ready
                ev("submit", 20.0, "small", 5),  # 2 free + a's 4 at 100
                ev("submit", 30.0, "huge", 11),  # larger than the section
            ]
        )
    )
    assert out == []  # nothing started: rows wait for the start or the end
    [(table, rows)] = list(st.finish())
    assert table is RELEASE_FORECAST
    big = [r for r in rows if r[1] == "big"]
    assert len(big) == 1 and big[0][5:7] == (1, "a") and big[0][-4:] == (None, None, None, None)
    small = [r for r in rows if r[1] == "small"]
    assert small == [(20.0, "small", 5, 2, 3, 1, "a", "a", 4, 100.0, 6, 0, 100.0, 80.0, None, None)]
    s = st.summary()
    assert s["forecasts"] == 2 and s["forecasts_never_ready"] == 1
    assert s["jobs_larger_than_section"] == 1 and s["holders_without_walltime"] == 2


def test_overrunning_holder_expected_at_now() -> None:
    st = ReleaseForecastStage(4)
    st.step([ev("start", 0.0, "a", 4, 60.0), ev("submit", hm(0, 5), "w", 2)])
    [(_, rows)] = list(st.finish())
    assert rows[0][9] == hm(0, 5) and rows[0][13] == 0.0


def test_figure9_with_a_reservation(tmp_path: Path) -> None:
    """The same, fc submitted at 09:50 with its reservation at 10:09 (the seed's delayed
    reservation): forecast at 09:50, late by 12 minutes against 10:09."""
    src = tmp_path / "fig9r.jsonl"
    src.write_bytes(b"\n".join(figure9_lines("09:50:00", "10:09:00")) + b"\n")
    out = tmp_path / "out"
    argv = ["replay", "--format", "jobevents", str(src), "--out", str(out), "--nodes", "116"]
    assert main([*argv, "--no-progress"]) == 0
    fc = [r for r in read_csv(out / "release_forecast.csv") if r["job"] == "fc"]
    assert [r["need_after"] for r in fc] == ["32", "16", "0"]
    assert {(r["ts"][11:19], r["reserved_start"][11:19]) for r in fc} == {("09:50:00", "10:09:00")}
    assert {(float(r["late_by_s"]), float(r["actual_late_s"])) for r in fc} == {(720.0, 720.0)}
    assert all(
        r["reserved_start"] == ""
        for r in read_csv(out / "release_forecast.csv")
        if r["job"] != "fc"
    )


def test_jobevent_reserved_start_round_trip() -> None:
    e = parse_jobevent_line(
        b'{"type":"submit","ts":0,"job":"x","reserved_start":"1970-01-01T00:01:00Z"}'
    )
    assert e.reserved_start == 60.0
    assert orjson.loads(e.to_json())["reserved_start"] == 60.0
    assert parse_jobevent_line(e.to_json()) == e
    assert "reserved_start" not in orjson.loads(JobEvent("submit", 0.0, "y").to_json())
    for bad in (b'"soon"', b"true", b'"2004-03-24T10:09:00"'):
        line = b'{"type":"submit","ts":0,"job":"x","reserved_start":' + bad + b"}"
        with pytest.raises(JobEventError) as err:
            parse_jobevent_line(line)
        assert err.value.reason == "bad_reserved_start"


def test_a_job_cancelled_while_pending_is_written_at_its_end() -> None:
    st = ReleaseForecastStage(10)
    assert list(st.step([ev("start", 0.0, "a", 8, 100.0), ev("submit", 10.0, "w", 4)])) == []
    [(table, rows)] = list(st.step([ev("end", 30.0, "w", 4)]))  # never started
    assert table is RELEASE_FORECAST
    assert rows == [(10.0, "w", 4, 2, 2, 1, "a", "a", 8, 100.0, 10, 0, 100.0, 90.0, None, None)]
    assert st.pending == {} and list(st.finish()) == []
    assert st.summary()["forecasts_late"] == 1 and st.summary()["mean_late_by_s"] == 90.0


@st_settings(max_examples=200, deadline=None)
@given(
    hst.lists(
        hst.tuples(
            hst.integers(1, 12),  # nodes
            hst.integers(0, 50),  # submit
            hst.one_of(hst.none(), hst.integers(0, 40)),  # wait, None: never starts
            hst.one_of(hst.none(), hst.integers(1, 60)),  # run, None: no end in the input
            hst.one_of(hst.none(), hst.integers(1, 80)),  # requested walltime
            hst.booleans(),  # cancelled (ends without a start) when it never starts
        ),
        max_size=25,
    ),
    hst.integers(1, 6),
)
def test_provisional_rows_are_overwritten_by_the_replays_rows(jobs: list[Any], every: int) -> None:
    """The live stage (rows of the jobs still pending at each flush too, the flush every
    ``every`` events) leaves, keyed by (ts, job, step) with the last write winning, exactly the
    replay stage's rows, and the same summary; a pending job's rows are made once."""
    events = []
    for k, (nodes, sub, wait, run, wall, cancel) in enumerate(jobs):
        j = f"j{k}"
        w = None if wall is None else float(wall)
        events.append(JobEvent("submit", float(sub), j, name=j, nodes=nodes, req_walltime=w))
        if wait is not None:
            events.append(
                JobEvent("start", float(sub + wait), j, name=j, nodes=nodes, req_walltime=w)
            )
            if run is not None:
                events.append(JobEvent("end", float(sub + wait + run), j, name=j, nodes=nodes))
        elif cancel:
            events.append(JobEvent("end", float(sub + 5), j, name=j, nodes=nodes))
    order = {"end": 0, "start": 1, "submit": 2}
    events.sort(key=lambda e: (e.ts, order[e.type], e.job))
    replay, live = ReleaseForecastStage(16), ReleaseForecastStage(16, provisional=True)
    want = [r for _, rows in [*replay.step(events), *replay.finish()] for r in rows]
    got: dict[tuple[Any, ...], Any] = {}
    made: list[str] = []
    for i, e in enumerate(events, 1):  # one event a batch, as a worker may see them
        for _, rows in live.step([e]):
            got.update({(r[0], r[1], r[5]): r for r in rows})
        if i % every == 0:  # a flush
            rows = live.provisional_rows()
            made += sorted({r[1] for r in rows})
            got.update({(r[0], r[1], r[5]): r for r in rows})
    assert len(made) == len(set(made))  # once each (every job here is submitted once)
    pending = set(live.pending)
    assert all(r[-2] is None for k, r in got.items() if k[1] in pending)  # not started yet
    for _, rows in live.finish():
        got.update({(r[0], r[1], r[5]): r for r in rows})
    assert sorted(got.values(), key=repr) == sorted(want, key=repr)
    assert len(got) == len(want)  # no stale step of a provisional forecast
    assert live.summary() == replay.summary()


@st_settings(max_examples=300, deadline=None)
@given(
    hst.lists(
        hst.tuples(
            hst.sampled_from(["submit", "start", "end"]),
            hst.integers(0, 60),  # time
            hst.integers(0, 9),  # job
            hst.integers(0, 20),  # nodes
            hst.one_of(hst.none(), hst.integers(1, 80)),  # requested walltime
        ),
        max_size=60,
    ),
    hst.integers(1, 40),
)
def test_running_sums_kept_as_jobs_start_and_end_equal_summing_them(
    events: list[Any], section: int
) -> None:
    """Busy nodes and jobs without a walltime are kept as jobs start and end (duplicate starts,
    ends without a start included): the same rows and summary as summing at every submit."""
    evs = sorted(
        (
            JobEvent(
                t,
                float(ts),
                f"j{j}",
                name=f"j{j}",
                nodes=n,
                req_walltime=None if w is None else float(w),
            )
            for t, ts, j, n, w in events
        ),
        key=lambda e: e.ts,
    )
    fast, ref = ReleaseForecastStage(section, provisional=True), release_stage_ref(section, True)
    for e in evs:
        assert list(fast.step([e])) == list(ref.step([e]))
        assert fast.provisional_rows() == ref.provisional_rows()
    assert list(fast.finish()) == list(ref.finish())
    assert fast.summary() == ref.summary()
