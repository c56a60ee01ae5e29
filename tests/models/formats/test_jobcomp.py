"""jobcomp/kafka (= jobcomp/elasticsearch) JSON records, built from the fields Slurm's
jobcomp_common_job_record_to_data() writes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from models.formats.jobcomp import iter_jobcomp_events, jobcomp_record_events
from models.records.jobevent import JobEventError
from models.records.reject import Reject


def utc(*a: int) -> float:
    return datetime(*a, tzinfo=UTC).timestamp()


def record(**over: Any) -> dict[str, Any]:
    """A completed job as jobcomp/kafka publishes it (field names and formats from Slurm)."""
    r: dict[str, Any] = {
        "jobid": 4242,
        "container": None,
        "username": "alice",
        "user_id": 1001,
        "groupname": "physics",
        "group_id": 500,
        "@start": "2025-03-04T10:00:00",
        "@end": "2025-03-04T11:30:00",
        "elapsed": 5400,
        "partition": "batch",
        "alloc_node": "login01",
        "nodes": "c[001-003],gpu07",
        "total_cpus": 96,
        "total_nodes": 4,
        "derived_ec": "0:0",
        "exit_code": "0:0",
        "state": "COMPLETED",
        "failed_node": None,
        "cpu_hours": 144.0,
        "@submit": "2025-03-04T09:58:30",
        "@eligible": "2025-03-04T09:58:30",
        "@queue_wait": 90,
        "work_dir": "/home/alice",
        "cluster": "alpha",
        "qos": "normal",
        "ntasks": 96,
        "time_limit": 7200,
        "job_name": "lammps",
        "tres_req": "cpu=96,node=4",
        "tres_alloc": "cpu=96,node=4",
        "account": "phys01",
        "parent_accounts": "/root/phys01",
    }
    r.update(over)
    return r


def test_completed_record() -> None:
    sub, st, en = jobcomp_record_events(record())
    common = dict(
        job="4242",
        user="alice",
        group="physics",
        account="phys01",
        partition="batch",
        name="lammps",
        nodes=4,
        cores=96,
        req_walltime=7200.0,
    )
    for e in (sub, st, en):
        for k, v in common.items():
            assert getattr(e, k) == v, k
    assert (sub.type, sub.ts) == ("submit", utc(2025, 3, 4, 9, 58, 30))
    assert (st.type, st.ts) == ("start", utc(2025, 3, 4, 10))
    assert (en.type, en.ts) == ("end", utc(2025, 3, 4, 11, 30))
    assert st.node_list == ("c001", "c002", "c003", "gpu07") == en.node_list
    assert en.state == "COMPLETED" and en.exit_code == 0
    assert sub.node_list == () and sub.state is None


def test_cancelled_while_pending_start_unknown() -> None:
    r = record(
        **{
            "@start": "Unknown",
            "nodes": None,
            "state": "CANCELLED",
            "elapsed": 0,
            "total_nodes": 0,
            "total_cpus": 0,
        }
    )
    ev = jobcomp_record_events(r)
    assert [e.type for e in ev] == ["submit", "end"]
    assert ev[1].node_list == () and ev[1].state == "CANCELLED"


def test_exit_codes() -> None:
    assert (
        jobcomp_record_events(record(derived_ec="2:0", exit_code="1:0", state="FAILED"))[
            -1
        ].exit_code
        == 2
    )
    assert jobcomp_record_events(record(derived_ec="0:9", state="TIMEOUT"))[-1].exit_code == 137
    assert jobcomp_record_events(record(derived_ec=None, exit_code="3:0"))[-1].exit_code == 3


def test_no_time_limit_and_user_id_fallback() -> None:
    r = record(username=None, groupname=None)
    del r["time_limit"]
    (sub, _, _) = jobcomp_record_events(r)
    assert sub.req_walltime is None and sub.user == "1001" and sub.group == "500"


def test_epoch_and_offset_times() -> None:
    r = record(
        **{
            "@start": 1741082400,
            "@end": "2025-03-04T11:30:00Z",
            "@submit": "2025-03-04T10:58:30+01:00",
        }
    )
    sub, st, en = jobcomp_record_events(r)
    assert sub.ts == utc(2025, 3, 4, 9, 58, 30) and st.ts == utc(2025, 3, 4, 10)
    assert en.ts == utc(2025, 3, 4, 11, 30)


def test_start_records_mode() -> None:
    running = record(state="RUNNING", **{"@end": "Unknown"})
    done = record()
    ev = [e for r in (running, done) for e in jobcomp_record_events(r, start_records=True)]
    assert [e.type for e in ev] == ["submit", "start", "end"]
    # default mode: every record is a completion record; a RUNNING record still gives a start
    assert [e.type for e in jobcomp_record_events(running)] == ["submit", "start"]


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"jobid": None}, "missing_jobid"),
        ({"@end": "Unknown"}, "missing_end"),
        ({"@end": "2025-03-04T09:00:00"}, "end_before_start"),
        ({"@start": "soon"}, "bad_start"),
        ({"nodes": "c[1-"}, "bad_nodes"),
        ({"total_cpus": -4}, "bad_total_cpus"),
        ({"time_limit": "long"}, "bad_time_limit"),
        ({"derived_ec": "x"}, "bad_exit_code"),
    ],
)
def test_bad_records(over: dict[str, Any], reason: str) -> None:
    with pytest.raises(JobEventError) as ei:
        jobcomp_record_events(record(**over))
    assert ei.value.reason == reason


def test_stream_with_rejects_and_elasticsearch_hits() -> None:
    lines = [
        orjson.dumps(record()),
        b"{not json",
        orjson.dumps([1, 2]),
        orjson.dumps({"_index": "slurm", "_source": record(jobid=7)}),
        b"",
        orjson.dumps(record(jobid=8, **{"@end": None})),
    ]
    rejects: list[Reject] = []
    ev = list(iter_jobcomp_events(lines, rejects, source="topic"))
    assert [e.job for e in ev] == ["4242"] * 3 + ["7"] * 3
    assert [(r.lineno, r.reason) for r in rejects] == [
        (2, "bad_json"),
        (3, "not_an_object"),
        (6, "missing_end"),
    ]
