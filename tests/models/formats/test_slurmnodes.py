"""Slurm snapshots -> NodeStatus: one test per row of the mapping table (models/formats/
slurmnodes.py), on outputs captured from a real Slurm 22.05 and written from the 23.11 / 24.05
formats (tests/models/formats/slurm/README.md says which is which)."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.formats.slurmnodes import (
    PLANNED_UNKNOWN,
    RESERVED_UNKNOWN,
    SlurmIteration,
    SlurmJob,
    SlurmNode,
    SlurmOutputError,
    format_fields,
    parse_nodes_json,
    parse_reservations_json,
    parse_reservations_text,
    parse_scontrol_nodes,
    parse_squeue_json,
    parse_squeue_text,
    slurm_iteration,
    split_state,
)
from models.records.nodestatus import NodeStatus

OUT = Path(__file__).resolve().parent / "slurm"


def _read(version: str, name: str) -> str:
    return (OUT / version / name).read_text()


def _ts(version: str) -> int:
    return int(_read(version, "snapshot_time")) * 1000


def _by_node(it: SlurmIteration) -> dict[str, NodeStatus]:
    return {r.node: r for r in it.records}


@pytest.fixture(scope="module")
def v2205_text() -> dict[str, NodeStatus]:
    nodes = parse_scontrol_nodes(_read("22.05", "scontrol_show_node_oneliner.txt"))
    jobs = parse_squeue_text(_read("22.05", "squeue.txt"))
    rsv = parse_reservations_text(_read("22.05", "scontrol_show_reservation.txt"))
    return _by_node(slurm_iteration(_ts("22.05"), nodes, jobs, rsv))


@pytest.fixture(scope="module")
def v2311_json() -> dict[str, NodeStatus]:
    ts = _ts("23.11")
    nodes = parse_nodes_json(_read("23.11", "scontrol_show_node.json"))
    jobs = parse_squeue_json(_read("23.11", "squeue.json"))
    rsv = parse_reservations_json(_read("23.11", "scontrol_show_reservation.json"), ts / 1000)
    return _by_node(slurm_iteration(ts, nodes, jobs, rsv))


@pytest.fixture(scope="module")
def v2405() -> SlurmIteration:
    nodes = parse_scontrol_nodes(_read("24.05", "scontrol_show_node_oneliner.txt"))
    jobs = parse_squeue_text(_read("24.05", "squeue.txt"))
    return slurm_iteration(1_795_473_650_000, nodes, jobs)


def _rec(r: NodeStatus) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    return r.state, r.rsvlist, r.joblist


# --- one test per row ---------------------------------------------------------------------


def test_row_down_bases(
    v2205_text: dict[str, NodeStatus], v2311_json: dict[str, NodeStatus], v2405: SlurmIteration
) -> None:
    assert _rec(v2205_text["n10"]) == ("Down", (), ())  # captured: State=DOWN
    assert _rec(v2311_json["n10"]) == ("Down", (), ())  # ["DOWN", "NOT_RESPONDING"]
    got = _by_node(v2405)
    for n in ("c04", "c11", "c12"):  # DOWN*+DRAIN, UNKNOWN*, FUTURE
        assert _rec(got[n]) == ("Down", (), ()), n


def test_row_drain_flag_with_jobs_is_draining(
    v2205_text: dict[str, NodeStatus], v2311_json: dict[str, NodeStatus], v2405: SlurmIteration
) -> None:
    assert _rec(v2205_text["n6"]) == ("Draining", (), ("2",))  # captured ALLOCATED+DRAIN
    assert _rec(v2311_json["n6"]) == ("Draining", (), ("2",))
    assert _rec(_by_node(v2405)["c03"]) == ("Draining", (), ("5002",))  # MIXED+DRAIN


def test_row_drain_or_fail_without_jobs_is_drained(
    v2205_text: dict[str, NodeStatus], v2311_json: dict[str, NodeStatus], v2405: SlurmIteration
) -> None:
    assert _rec(v2205_text["n9"]) == ("Drained", (), ())  # captured IDLE+DRAIN
    assert _rec(v2311_json["n9"]) == ("Drained", (), ())
    assert _rec(_by_node(v2405)["c08"]) == ("Drained", (), ())  # IDLE+FAIL


def test_row_allocated_mixed_completing_run_their_jobs(
    v2205_text: dict[str, NodeStatus], v2311_json: dict[str, NodeStatus], v2405: SlurmIteration
) -> None:
    for n in ("n1", "n2", "n3", "n4", "n5"):
        # running, and already in the SchedNodes of the two pending jobs (reported, not drain)
        assert _rec(v2205_text[n]) == ("Running", ("3", "4"), ("1",)), n
        assert _rec(v2311_json[n]) == ("Running", ("3", "4"), ("1",)), n
    got = _by_node(v2405)
    assert _rec(got["c01"]) == ("Running", (), ("5001", "5002"))  # MIXED: two jobs
    assert _rec(got["c02"]) == ("Running", ("5010",), ("5001", "5003_7"))  # MIXED+PLANNED


def test_row_running_while_planned_for_the_next_job_captured() -> None:
    d = OUT / "22.05" / "allocated_planned"
    nodes = parse_scontrol_nodes((d / "scontrol_show_node_oneliner.txt").read_text())
    jobs = parse_squeue_text((d / "squeue.txt").read_text())
    got = _by_node(slurm_iteration(int((d / "snapshot_time").read_text()) * 1000, nodes, jobs))
    for n in ("n7", "n8"):  # ALLOCATED+PLANNED: job 3 runs there, job 4 is planned next
        assert _rec(got[n]) == ("Running", ("4",), ("3",)), n
    assert _rec(got["n10"]) == ("Down", (), ())  # DOWN+NOT_RESPONDING
    assert _rec(got["n6"]) == ("Drained", (), ())  # its job ended: IDLE+DRAIN


def test_row_completing_runs_its_completing_job(v2405: SlurmIteration) -> None:
    got = _by_node(v2405)
    assert _rec(got["c15"]) == ("Running", (), ("5004",))  # IDLE+COMPLETING
    assert _rec(got["c16"]) == ("Running", (), ("5004",))  # ALLOCATED+COMPLETING


def test_row_powered_down_rebooting_not_responding_idle_is_down(v2405: SlurmIteration) -> None:
    got = _by_node(v2405)
    for n in ("c05", "c06", "c07"):  # IDLE*, IDLE+CLOUD+POWERED_DOWN, IDLE+REBOOT_ISSUED
        assert _rec(got[n]) == ("Down", (), ()), n


def test_row_idle_planned_is_drain_charged_to_the_earliest_pending_job(
    v2205_text: dict[str, NodeStatus], v2311_json: dict[str, NodeStatus]
) -> None:
    # captured: jobs 3 (start 22:43:23) and 4 (22:44:20) both expect n[1-5,7-8]: 3 first
    for n in ("n7", "n8"):
        assert _rec(v2205_text[n]) == ("Idle", ("3", "4"), ()), n
        # 23.11 JSON lists job 4 before job 3: the expected start orders them, not the listing
        assert _rec(v2311_json[n]) == ("Idle", ("3", "4"), ()), n


def test_row_idle_planned_without_sched_nodes_is_charged_to_planned() -> None:
    # 22.05's JSON has the PLANNED flag but no scheduled_nodes: drain, job unknown
    nodes = parse_nodes_json(_read("22.05", "sinfo.json"))
    jobs = parse_squeue_json(_read("22.05", "squeue.json"))
    assert all(j.sched_nodes == () for j in jobs)
    it = slurm_iteration(_ts("22.05"), nodes, jobs)
    got = _by_node(it)
    assert _rec(got["n7"]) == ("Idle", (PLANNED_UNKNOWN,), ())
    assert _rec(got["n8"]) == ("Idle", (PLANNED_UNKNOWN,), ())
    assert it.planned_unnamed == 2
    assert _rec(got["n1"]) == ("Running", (), ("1",))


def test_row_idle_in_advance_reservation_is_held_for_the_reservation(
    v2205_text: dict[str, NodeStatus], v2311_json: dict[str, NodeStatus], v2405: SlurmIteration
) -> None:
    for got in (v2205_text, v2311_json):
        assert _rec(got["n11"]) == ("Idle", ("resv_a",), ())  # IDLE+RESERVED
        assert _rec(got["n12"]) == ("Idle", ("maint",), ())  # IDLE+MAINTENANCE+RESERVED
    # 24.05: the node output names the reservation itself
    assert _rec(_by_node(v2405)["c09"]) == ("Idle", ("course_2026",), ())
    # RESERVED with no reservation listed: still held, name unknown
    it = slurm_iteration(0, [SlurmNode("x1", "IDLE", ("RESERVED",))], [])
    assert _rec(it.records[0]) == ("Idle", (RESERVED_UNKNOWN,), ())


def test_row_plain_idle_is_unallocated(
    v2205_text: dict[str, NodeStatus], v2405: SlurmIteration
) -> None:
    # c14 is in job 5010's SchedNodes but not PLANNED: the controller does not hold it
    assert _rec(_by_node(v2405)["c14"]) == ("Idle", (), ())
    assert slurm_iteration(5, [SlurmNode("a1", "IDLE")], []).records == [
        NodeStatus(5, "a1", "Idle", (), ())
    ]


def test_row_other_base_is_kept_and_unknown_flags_are_counted(v2405: SlurmIteration) -> None:
    got = _by_node(v2405)
    assert _rec(got["c13"]) == ("Sleeping", (), ())  # an unknown base: a state of its own
    assert _rec(got["c10"]) == ("Idle", (), ())  # IDLE+NEWFLAG: the flag changes nothing
    assert v2405.unknown_flags == {"NEWFLAG": 1}


# --- the readers --------------------------------------------------------------------------


def test_text_and_json_forms_of_one_snapshot_agree() -> None:
    one = parse_scontrol_nodes(_read("22.05", "scontrol_show_node_oneliner.txt"))
    multi = parse_scontrol_nodes(_read("22.05", "scontrol_show_node.txt"))
    js = parse_nodes_json(_read("22.05", "sinfo.json"))
    assert one == multi
    assert [(n.name, n.base, n.flags) for n in js] == [(n.name, n.base, n.flags) for n in one]
    assert len(one) == 12
    text = parse_squeue_text(_read("22.05", "squeue.txt"))
    js_jobs = parse_squeue_json(_read("22.05", "squeue.json"))
    assert sorted((j.job_id, j.state, j.nodes, j.start) for j in text) == sorted(
        (j.job_id, j.state, j.nodes, j.start) for j in js_jobs
    )  # text times are naive UTC here (the capture host ran in UTC)


def test_every_node_once_at_the_snapshot_time(v2205_text: dict[str, NodeStatus]) -> None:
    assert len(v2205_text) == 12
    assert {r.ts_ms for r in v2205_text.values()} == {_ts("22.05")}
    twice = [SlurmNode("a1", "IDLE"), SlurmNode("a1", "DOWN")]
    assert [r.state for r in slurm_iteration(0, twice, []).records] == ["Idle"]


def test_array_job_ids_and_json_time_objects() -> None:
    jobs = {j.job_id: j for j in parse_squeue_json(_read("23.11", "squeue.json"))}
    assert jobs["10_2"].start is None and jobs["10_2"].state == "PENDING"
    assert jobs["3"].start == 1795473803.0 and jobs["3"].sched_nodes[-1] == "n8"


def test_reservations_json_active_by_time() -> None:
    rs = parse_reservations_json(_read("23.11", "scontrol_show_reservation.json"), 1795473650)
    assert {r.name: r.active for r in rs} == {"resv_a": True, "maint": True, "future": False}


def test_split_state() -> None:
    assert split_state("DOWN*+DRAIN") == ("DOWN", ("NOT_RESPONDING", "DRAIN"))
    assert split_state("idle+planned") == ("IDLE", ("PLANNED",))
    assert split_state("drained") == ("IDLE", ("DRAIN",))
    assert split_state("mixed~") == ("MIXED", ())


@pytest.mark.parametrize(
    "fmt",
    ["%i %T %S %Y %N", "%.10i %.2t %.20S %.30Y %.30N", "%i|%T|%S", "%i|%T,%S|%Y|%N"],
)
def test_squeue_format_must_be_delimited(fmt: str) -> None:
    with pytest.raises(SlurmOutputError) as e:
        format_fields(fmt)
    assert e.value.reason == "bad_squeue_format"


def test_squeue_other_field_order_and_short_states() -> None:
    text = "ST;JOBID;NODELIST;SCHEDNODES\nPD;7;;a[1-2]\nCG;6;a3;(null)\n"
    jobs = parse_squeue_text(text, "%t;%i;%N;%Y")
    assert jobs == [
        SlurmJob("7", "PENDING", (), ("a1", "a2")),
        SlurmJob("6", "COMPLETING", ("a3",)),
    ]


@pytest.mark.parametrize(
    ("reader", "text", "reason"),
    [
        (parse_scontrol_nodes, "garbage line\n", "bad_scontrol_output"),
        (parse_scontrol_nodes, "NodeName=a1 Arch=x\n", "bad_node_record"),
        (parse_nodes_json, "{not json", "bad_json"),
        (parse_nodes_json, '{"nodes": [], "errors": [{"error": "denied"}]}', "slurm_error"),
        (parse_nodes_json, '{"nodes": [{"name": "a1", "state": []}]}', "bad_node_state"),
        (parse_squeue_json, '{"jobs": [{"job_state": "RUNNING"}]}', "bad_job_record"),
        (parse_squeue_text, "1|RUNNING|N/A|(null)\n", "bad_squeue_line"),
        (parse_squeue_text, "1|RUNNING|N/A|(null)|a[3-1]\n", "reversed_range"),
    ],
)
def test_unreadable_output_refuses_the_iteration(reader: object, text: str, reason: str) -> None:
    with pytest.raises(SlurmOutputError) as e:
        reader(text)  # type: ignore[operator]
    assert e.value.reason == reason


def test_no_nodes() -> None:
    assert parse_scontrol_nodes("No nodes in the system\n") == []
    assert parse_scontrol_nodes("") == []


def test_without_the_planned_flag_sched_nodes_hold_idle_nodes() -> None:
    # Slurm before 21.08 prints no PLANNED: --sched-nodes-hold trusts SchedNodes alone
    nodes = parse_scontrol_nodes(_read("24.05", "scontrol_show_node_oneliner.txt"))
    jobs = parse_squeue_text(_read("24.05", "squeue.txt"))
    got = _by_node(slurm_iteration(0, nodes, jobs, planned_flag=False))
    assert _rec(got["c14"]) == ("Idle", ("5010",), ())
    assert _rec(got["c02"]) == ("Running", ("5010",), ("5001", "5003_7"))
