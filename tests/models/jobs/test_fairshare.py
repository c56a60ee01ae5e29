"""Fair-share usage with continuous half-life decay and node-fault refunds (seed 004)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings

from models.jobs.fairshare import FairShareUsage, decayed_charge
from models.records.jobevent import JobEvent
from tests.reference_jobs import build_events, fairshare_ref, job_specs

DAY = 86400.0


def ev(
    t: str,
    ts: float,
    job: str,
    nodes: int = 1,
    user: str = "u",
    account: str = "snl",
    state: str | None = None,
) -> JobEvent:
    return JobEvent(t, ts, job, user=user, account=account, nodes=nodes, state=state)


def test_half_life_halves() -> None:
    m = FairShareUsage(half_life=7 * DAY)
    m.update([ev("start", 0, "a", 100), ev("end", 36.0, "a", 100)])  # 1 node-hour, near-instant
    v0 = m.value("user", "u", 36.0)
    assert v0 == pytest.approx(1.0, rel=1e-4)
    assert m.value("user", "u", 36.0 + 7 * DAY) == pytest.approx(v0 / 2)
    assert m.value("account", "snl", 36.0 + 14 * DAY) == pytest.approx(v0 / 4)


def test_long_job_charge_is_decayed_integral() -> None:
    h = 7 * DAY
    # a 7-day job on 10 nodes: 1680 node-hours raw, 10/3600 * h/ln2 * (1 - 1/2) at its end
    c = decayed_charge(10, 0.0, h, h)
    assert c == pytest.approx(10 / 3600 * h / math.log(2) * 0.5)
    assert c == pytest.approx(1680 / (2 * math.log(2)))
    assert decayed_charge(10, 0.0, h, math.inf) == 1680.0


def test_node_fail_refund() -> None:
    m = FairShareUsage()
    m.update(
        [
            ev("start", 0, "a", 4),
            ev("end", 3600, "a", 4, state="NODE_FAIL"),
            ev("start", 0, "b", 2),
            ev("end", 3600, "b", 2, state="COMPLETED"),
        ]
    )
    rows = {(r.holder_kind, r.holder): r for r in m.report(3600)}
    r = rows[("user", "u")]
    assert r.refunded_node_hours == 4.0 and r.charged_node_hours == 2.0
    # 2 node-hours over the last hour, decayed continuously: slightly under 2
    assert r.usage_node_hours == pytest.approx(decayed_charge(2, 0, 3600, 7 * DAY))
    assert 1.99 < r.usage_node_hours < 2.0
    assert m.refunded_jobs == 1
    no_refund = FairShareUsage(refund_states=())
    no_refund.update([ev("start", 0, "a", 4), ev("end", 3600, "a", 4, state="NODE_FAIL")])
    assert no_refund.value("user", "u", 3600) == pytest.approx(4.0, rel=1e-2)


def test_report_drops_decayed_holders() -> None:
    m = FairShareUsage(half_life=DAY)
    m.update([ev("start", 0, "a"), ev("end", 3600, "a")])
    assert len(m.report(3600)) == 2
    assert m.report(3600 + 30 * DAY) == []  # 2^-30 node-hours: gone


@settings(max_examples=40, deadline=None)
@given(job_specs())
def test_matches_reference(specs) -> None:
    evs = build_events(specs)
    h = 2 * DAY
    m = FairShareUsage(half_life=h)
    m.update(evs)
    at = (evs[-1].ts if evs else 0.0) + 3600
    ref = fairshare_ref(evs, h, at, {"NODE_FAIL"})
    for (kind, holder), v in ref.items():
        assert m.value(kind, holder, at) == pytest.approx(v, rel=1e-4, abs=1e-9)
