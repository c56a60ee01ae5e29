"""Node samples of simulated jobs: one per job, node and minute while the job runs, counters
that never go back, and the burst job's writes above its share only in the burst minutes."""

from __future__ import annotations

from collections import defaultdict

from models.records.jobevent import JobEvent
from models.sim.nodesamples import MB, SampleModel, node_samples, running_jobs

T0 = 1_700_000_040.0  # a minute boundary


def _events() -> list[JobEvent]:
    return [
        JobEvent("start", T0 - 600, "big", node_list=tuple(f"n{i}" for i in range(8))),
        JobEvent("start", T0 + 600, "small", node_list=("n9",)),
        JobEvent("end", T0 + 1800, "small", node_list=("n9",)),
        JobEvent("start", T0 - 900, "gone", node_list=("n10",)),
        JobEvent("end", T0 - 300, "gone", node_list=("n10",)),
    ]


def test_running_jobs_in_the_window() -> None:
    jobs = running_jobs(_events(), T0, T0 + 3600)
    assert [(j, len(n), e) for j, n, _, e in jobs] == [
        ("big", 8, T0 + 3600),
        ("small", 1, T0 + 1800),
    ]


def test_samples_counters_and_burst() -> None:
    m = SampleModel(burst_at=0.5, burst_minutes=10, burst_mb_s=200.0)
    samples = list(node_samples(_events(), T0, T0 + 3600, seed=3, m=m))
    per = defaultdict(list)
    for s in samples:
        per[(s.job, s.node)].append(s)
    assert len(per) == 9 and len(per[("big", "n0")]) == 60 and len(per[("small", "n9")]) == 20
    assert all(s.cores == 32 and 0 < s.core <= 3200 for s in samples)
    for series in per.values():
        w = [s.write_bytes for s in series]
        assert w == sorted(w)  # cumulative, never back
    # the burst job writes 200 MB/s over its 8 nodes in minutes 30-39 and little otherwise
    big = per[("big", "n0")]
    rate = [(b.write_bytes - a.write_bytes) / 60 / MB for a, b in zip(big, big[1:], strict=False)]
    hot = [i for i, r in enumerate(rate) if r > 200 / 8]
    assert hot == list(range(hot[0], hot[0] + 10)) and 28 <= hot[0] <= 30
    assert max(r for i, r in enumerate(rate) if i not in hot) < 200 / 8 / 4
