"""Poison input on the real stack (issue 30): a worker goes on past (1) a message that fails to
decode in the combine step, (2) a job event that makes a stage raise, each dead-lettered with
its reason, place and stage while the good events around it reach InfluxDB; and (3) a message
that crashed a worker (the rollback itself failed) is dead-lettered by the restarted worker
instead of stopping it again.

No input found trips a real stage (the job stages take every event the forward step lets
through), so the faults are injected, named as such, by this file's own launcher: it patches
the turnover stage to raise on one job's end (and, for (3), the job family's restore to raise)
and then runs the ordinary ``drainwatch worker``. Production code has no hook for it."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import orjson
import pytest

from streams.sinks.points import MEASUREMENTS
from streams.tables.jobs import RUNTIME_PREDICTIONS
from tests.integration.test_live_drain import Live

pytestmark = pytest.mark.integration

T0 = 1_700_000_000.0
# fault injection: DW_FAULT names what raises ("stage": the turnover stage on the end of job
# "poison"; "restore": the job family's restore after its first, so a rollback fails), then
# the worker runs
LAUNCHER = """
import os, sys
from streams.live.jobs import JobsCombine
from streams.stages.turnover import TurnoverStage
faults = os.environ["DW_FAULT"].split(",")
if "stage" in faults:
    step = TurnoverStage.step
    def faulty(self, batch):
        out = list(step(self, batch))
        if any(e.job == "poison" and e.type == "end" for e in batch):
            raise ValueError("fault injected: job poison")
        return out
    TurnoverStage.step = faulty
if "restore" in faults:  # the state loaded at the start restores; a rollback's raises
    restore, calls = JobsCombine.restore, []
    def broken(self, version, tree):
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("fault injected: restore")
        restore(self, version, tree)
    JobsCombine.restore = broken
from streams.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _faulty_worker(live: Live, faults: str) -> subprocess.Popen[bytes]:
    """``live.worker()`` run through the fault-injecting launcher."""
    live.env["DW_FAULT"] = faults
    exe = sys.executable
    import tests.integration.test_live_drain as tld

    saved = tld._cli
    tld._cli = lambda *args: [exe, "-c", LAUNCHER, *args]  # type: ignore[assignment]
    try:
        return live.worker()
    finally:
        tld._cli = saved


def _job(job: str, submit: float, run: float) -> list[bytes]:
    base = {"job": job, "user": "u1", "group": "g1", "name": "n", "nodes": 1, "cores": 4}
    kinds = (("submit", submit), ("start", submit + 10), ("end", submit + 10 + run))
    return [orjson.dumps({**base, "req_walltime": 3600, "type": k, "ts": t}) for k, t in kinds]


def _dead(live: Live) -> list[dict[str, Any]]:
    return [orjson.loads(v) for _, v in live.consume("dead-letter")]


def _predicted(live: Live) -> set[str]:
    m = MEASUREMENTS[RUNTIME_PREDICTIONS.file]
    try:
        return {str(p["job"]) for p in live.influx.influxql(f'SELECT * FROM "{m.name}"')}
    except Exception:  # noqa: BLE001 (no measurement yet)
        return set()


def _until(
    what: str, check: Any, proc: subprocess.Popen[bytes] | None, live: Live, timeout: float = 90
) -> Any:
    """``check()`` once true; a failure shows the dead letters and the workers' logs."""
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            logs = "".join(
                f"--- {f.name}\n{f.read_text(errors='replace')[-4000:]}"
                for f in sorted(live.tmp.glob("worker*.log"))
            )
            stopped = proc is not None and proc.poll() is not None
            pytest.fail(
                f"{'the worker stopped' if stopped else 'timed out'} waiting for {what}; "
                f"predicted {sorted(_predicted(live))}; dead letters {_dead(live)}\n{logs}"
            )
        time.sleep(0.5)
    return got


def test_poison_input_is_dead_lettered_and_the_worker_goes_on(live: Live) -> None:
    live.env["DRAINWATCH_LIVE_JOBS"] = "on"
    live.env["DRAINWATCH_TOPIC_PARTITIONS"] = "1"
    live.env["DRAINWATCH_LATENESS"] = "1"
    w = _faulty_worker(live, "stage")

    # in event-time order: a take may end anywhere, and an event more than the lateness (1 s)
    # behind one already taken is late (dead-lettered), not a prediction
    # (1) a partials message the combine step cannot decode, between good events
    live.produce("job-events", _job("1", T0, 300) + _job("2", T0 + 400, 5))
    live.produce("jobs-partials", [b'{"partition": "x", "events": []}'])
    # (2) a job event that makes the turnover stage raise, among good ones
    live.produce("job-events", _job("poison", T0 + 700, 30) + _job("3", T0 + 760, 20))
    live.produce("job-events", _job("4", T0 + 7200, 60))
    good = {"1", "2", "3"}
    _until("the good jobs' predictions", lambda: good <= _predicted(live), w, live)

    def poison() -> list[dict[str, Any]]:
        return [d for d in _dead(live) if d["source"].startswith("jobs")]

    dead = _until("two dead letters", lambda: len(poison()) >= 2 and poison(), w, live)
    by_source = {d["source"]: d for d in dead}
    assert by_source["jobs"]["reason"] == "stage_error"
    assert by_source["jobs"]["error"].startswith("CodecError: bad_message")
    assert by_source["jobs"]["topic"] == live.prefix + "jobs-partials"
    stage = by_source["jobs/turnover"]
    assert stage["reason"] == "stage_error"
    assert stage["error"] == "ValueError: fault injected: job poison"
    # where the event was read: job "poison"'s messages are job-events offsets 6 to 8
    assert stage["topic"] == live.prefix + "job-events" and stage["partition"] == 0
    assert 6 <= stage["offset"] <= 8
    assert orjson.loads(stage["text"])["job"] == "poison"
    assert "poison" not in _predicted(live)
    assert live.metrics()["drainwatch_poison_total"] == 2
    assert w.poll() is None

    # (3) a rollback that fails (the family's restore raises): the worker stops on the
    # message it was applying and records it...
    _until("a saved state", lambda: _saved(live), w, live)
    live.stop()
    live.procs.clear()
    w = _faulty_worker(live, "stage,restore")
    crash = b'{"partition": 0, "events": "crash"}'
    live.produce("jobs-partials", [crash])
    assert w.wait(60) != 0
    keys = {k for k, _ in live.consume("worker-state")}
    assert f"{live.group}/jobs/poison".encode() in keys
    # ...and, restarted with the same faults, dead-letters it instead of stopping again
    live.procs.clear()
    w = _faulty_worker(live, "stage,restore")
    live.produce("job-events", _job("5", T0 + 9000, 60) + _job("6", T0 + 20000, 60))
    _until("job 5's prediction", lambda: "5" in _predicted(live), w, live)
    again = [d for d in _dead(live) if d["reason"] == "crashed_worker"]
    assert again, _dead(live)
    assert again[0]["error"] == ("crashed the worker before: RuntimeError: fault injected: restore")
    assert again[0]["text"] == crash.decode() and again[0]["source"] == "jobs"
    assert w.poll() is None


def _saved(live: Live) -> bool:
    return f"{live.group}/jobs/a".encode() in {k for k, _ in live.consume("worker-state")}
