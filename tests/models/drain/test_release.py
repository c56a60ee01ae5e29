"""Node-release forecast (seed 001, Figure 9: Free / Need / late-by)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.drain.release import Holder, ReleaseForecaster, forecast_in_order, forecast_release
from models.jobs.runtime import RuntimePredictor
from models.records.jobevent import JobEvent


def hm(h: int, m: int, s: int = 0) -> float:
    return h * 3600.0 + m * 60 + s


# Figure 9: 116 nodes reserved for 10:09; at 10:13:34, 66 in operational use, 2 free, Need 48.
RUNNING = [
    Holder("hpcb2401.1474974.0", 16, hm(10, 13, 34) + 86400, "ehf9_model_fc", checkpointable=True),
    Holder("hpcb2401.1475089.0", 16, hm(10, 17), "ehht_ifstraj_uptraj_0"),
    Holder("hpcb2301.1474748.0", 16, hm(10, 21), "ehba_ifstraj_uptraj_0"),
]


def test_figure9_with_checkpoint() -> None:
    f = forecast_release(
        need=116, at=hm(10, 9), held=66 + 2, running=RUNNING, now=hm(10, 13, 34), checkpoint=True
    )
    assert f.missing == 48
    assert [(s.name, s.nodes, s.need_after) for s in f.steps] == [
        ("ehf9_model_fc", 16, 32),
        ("ehht_ifstraj_uptraj_0", 16, 16),
        ("ehba_ifstraj_uptraj_0", 16, 0),
    ]
    assert f.steps[0].checkpointed and f.steps[0].release_at == hm(10, 13, 34)
    assert f.ready_at == hm(10, 21)
    assert f.late_by == 12 * 60  # within the seed's 15-minute flexibility
    assert f.in_the_way == tuple(r.job for r in RUNNING)


def test_figure9_without_checkpoint_waits_for_unknown_job() -> None:
    f = forecast_release(need=116, at=hm(10, 9), held=68, running=RUNNING, now=hm(10, 13, 34))
    assert [s.need_after for s in f.steps] == [32, 16, 0]
    assert f.steps[-1].name == "ehf9_model_fc"
    assert f.late_by == pytest.approx(hm(10, 13, 34) + 86400 - hm(10, 9))


def test_enough_nodes_and_not_enough() -> None:
    ok = forecast_release(need=10, at=100.0, held=10, running=RUNNING, now=50.0)
    assert ok.missing == 0 and ok.late_by == 0.0 and ok.steps == ()
    short = forecast_release(need=200, at=100.0, held=10, running=RUNNING)
    assert short.ready_at is None and short.late_by is None and len(short.steps) == 3
    early = forecast_release(need=84, at=hm(10, 30), held=68, running=RUNNING[1:], now=hm(10, 0))
    assert early.ready_at == hm(10, 17) and early.late_by == 0.0 and early.in_the_way == ()


def test_from_predictor_running_view() -> None:
    m = RuntimePredictor()
    evs = []
    for i in range(2):
        evs += [
            JobEvent("start", i * 1000.0, f"h{i}", user="rdx", name="fc", nodes=16),
            JobEvent("end", i * 1000.0 + 600, f"h{i}", user="rdx", name="fc", nodes=16),
        ]
    evs += [JobEvent("start", 5000.0, "r1", user="rdx", name="fc", nodes=16)]
    m.update(evs)
    holders = [Holder(r.job, r.nodes, r.expected_end, r.name) for r in m.running(5100)]
    f = forecast_release(need=16, at=5500.0, held=0, running=holders, now=5100.0)
    assert f.ready_at == 5600.0 and f.late_by == 100.0 and f.in_the_way == ("r1",)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-5, 40), st.integers(0, 50)), max_size=12),
    st.integers(0, 120),
    st.integers(0, 60),
    st.integers(0, 60),
    st.integers(0, 60),
)
def test_in_order_equals_forecast_release(
    jobs: list[tuple[int, int]], need: int, held: int, at: int, now: int
) -> None:
    """The walk over running jobs given in order (past ones released at ``now``, ties by job)
    makes exactly forecast_release's forecast, nodes <= 0 and every timing case included."""
    running = [Holder(f"j{k:02d}", n, float(end), f"n{k}") for k, (n, end) in enumerate(jobs)]
    releases = sorted(
        (max(h.expected_end, float(now)), h.job, h.nodes, h.name, False) for h in running
    )
    want = forecast_release(need, float(at), held, running, now=float(now))
    assert forecast_in_order(need, float(at), held, iter(releases), float(now)) == want


def test_the_forecaster_resolves_each_forecast_at_the_start_or_end_of_its_job() -> None:
    """ReleaseForecaster's rules: a forecast at each submit that fits the section, resolved
    once, at the job's start (a later reservation retaken) or at its end while pending
    (cancelled), or by unresolved() at the end of the input."""
    m = ReleaseForecaster(10)
    assert m.start(JobEvent("start", 0.0, "a", nodes=8, req_walltime=100.0)) is None
    assert not m.submit(JobEvent("submit", 5.0, "big", nodes=11))  # larger than the section
    assert not m.submit(JobEvent("submit", 5.0, "none", nodes=0))
    assert m.submit(JobEvent("submit", 10.0, "w", nodes=4))  # 2 free, a releases 8 at 100
    cancelled = m.end("w")
    assert cancelled is not None and m.end("w") is None  # resolved once
    ts, f, rsv, started = cancelled
    assert (ts, f.missing, f.ready_at, f.late_by, rsv, started) == (10.0, 2, 100, 90, None, None)
    assert m.submit(JobEvent("submit", 40.0, "x", nodes=4))
    # the start carries a reservation made after the submit: the forecast is taken against it
    run = m.start(JobEvent("start", 100.0, "x", nodes=4, reserved_start=120.0))
    assert run is not None
    ts, f, rsv, started = run
    assert (ts, f.at, f.late_by, rsv, started) == (40.0, 120.0, 0.0, 120.0, 100.0)
    # at 110, a is past its end (released at once) and x has no walltime (not counted on)
    assert m.submit(JobEvent("submit", 110.0, "y", nodes=2))
    [(job, (ts, f, rsv, started))] = m.unresolved()
    assert (job, ts, f.ready_at, started) == ("y", 110.0, 110.0, None) and not m.pending
    s = m.summary()
    assert (s["forecasts"], s["forecasts_late"], s["jobs_larger_than_section"]) == (3, 1, 1)
    assert s["mean_late_by_s"] == 30.0 and s["mean_actual_late_s"] == -20.0
    assert s["holders_without_walltime"] == 1
