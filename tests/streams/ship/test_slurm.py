"""The Slurm shipper's snapshot discipline: commands run without a shell and with a timeout, a
failed or slow or unreadable snapshot is taken again, then skipped and counted, and nothing of
a failed iteration is ever written. Slurm's clients are replaced here by small stand-in
executables that print outputs captured from a real Slurm 22.05 (tests/models/formats/slurm/)
or fail on purpose: failures cannot be injected into a real slurmctld at will. The real Slurm
runs in tests/integration/test_ship_slurm.py."""

from __future__ import annotations

import asyncio
import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from models.formats.slurmnodes import (
    parse_reservations_text,
    parse_scontrol_nodes,
    parse_squeue_text,
    slurm_iteration,
)
from streams.ship.slurm import SlurmCommands, SlurmShipper, SnapshotFailed, take_snapshot
from tests.paths import REPO

CAPTURED = REPO / "tests" / "models" / "formats" / "slurm" / "22.05"


def _tool(d: Path, name: str, body: str) -> str:
    """A stand-in client: a shell script (the shipper itself never uses a shell)."""
    p = d / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def _stand_ins(d: Path, squeue_body: str | None = None) -> SlurmCommands:
    sc = _tool(
        d,
        "scontrol",
        f"""case "$*" in
  --version) echo "slurm 22.05.8";;
  "--all --oneliner show node") cat {CAPTURED}/scontrol_show_node_oneliner.txt;;
  "--oneliner show reservation") cat {CAPTURED}/scontrol_show_reservation.txt;;
  *) echo "unexpected: $*" >&2; exit 1;;
esac
""",
    )
    sq = _tool(
        d,
        "squeue",
        squeue_body
        or f"""[ "$*" = "--all --array --format=%i|%T|%S|%Y|%N" ] \
|| {{ echo "unexpected: $*" >&2; exit 1; }}
cat {CAPTURED}/squeue.txt
""",
    )
    return SlurmCommands(sc, sq, timeout=5.0)


def _expected(ts_ms: int) -> list[bytes]:
    it = slurm_iteration(
        ts_ms,
        parse_scontrol_nodes((CAPTURED / "scontrol_show_node_oneliner.txt").read_text()),
        parse_squeue_text((CAPTURED / "squeue.txt").read_text()),
        parse_reservations_text((CAPTURED / "scontrol_show_reservation.txt").read_text()),
    )
    from streams.ship.slurm import record_json

    return [record_json(r) for r in it.records]


def test_snapshot_reads_the_text_forms_and_is_stamped_when_it_starts(tmp_path: Path) -> None:
    cmds = _stand_ins(tmp_path)
    assert cmds.resolved_form() == "text"
    it = take_snapshot(cmds, "text", lambda: 1795473650.1234)
    assert [r.ts_ms for r in it.records] == [1795473650123] * 12
    assert {r.node: r.rsvlist for r in it.records}["n7"] == ("3", "4")


def test_dry_run_prints_every_record_of_every_iteration(tmp_path: Path) -> None:
    out = io.BytesIO()
    times = iter([100.0, 160.0])
    sh = SlurmShipper(_stand_ins(tmp_path), None, out, clock=lambda: next(times))
    asyncio.run(sh.run(period=0.01, count=2))
    lines = out.getvalue().splitlines()
    assert lines == _expected(100_000) + _expected(160_000)
    n7 = {
        "ts": "1970-01-01T00:01:40.000Z",
        "node": "n7",
        "state": "Idle",
        "rsvlist": ["3", "4"],
        "joblist": [],
    }
    assert orjson.loads(lines[6]) == n7
    assert (sh.stats.iterations, sh.stats.records, sh.stats.skipped_iterations) == (2, 24, 0)


def test_a_failed_command_is_retried_and_the_iteration_sent_whole(tmp_path: Path) -> None:
    flag = tmp_path / "failed_once"
    cmds = _stand_ins(
        tmp_path,
        f"""if [ ! -e {flag} ]; then touch {flag}
echo "slurm_load_jobs error: Socket timed out on send/recv operation" >&2; exit 1; fi
cat {CAPTURED}/squeue.txt
""",
    )
    out = io.BytesIO()
    sh = SlurmShipper(cmds, None, out, retries=2, retry_wait=0.01, clock=lambda: 100.0)
    asyncio.run(sh.run(period=0.01, count=1))
    assert out.getvalue().splitlines() == _expected(100_000)
    assert (sh.stats.failed_attempts, sh.stats.iterations, sh.stats.skipped_iterations) == (1, 1, 0)
    assert "Socket timed out" in sh.stats.last_error


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("sleep 5\n", "timed out after 0.3 s"),
        ("echo '1|RUNNING|N/A|(null)'\n", "unreadable Slurm output (bad_squeue_line"),
        ("exit 3\n", "exited 3: (no message)"),
    ],
)
def test_a_snapshot_failing_every_attempt_is_skipped_and_nothing_is_sent(
    tmp_path: Path, body: str, why: str
) -> None:
    cmds = _stand_ins(tmp_path, body)
    cmds = SlurmCommands(cmds.scontrol, cmds.squeue, timeout=0.3)
    out = io.BytesIO()
    sh = SlurmShipper(cmds, None, out, retries=1, retry_wait=0.01)
    asyncio.run(sh.run(period=0.01, count=2))
    assert out.getvalue() == b""  # the node output was read, but no partial iteration left
    assert (sh.stats.iterations, sh.stats.skipped_iterations, sh.stats.failed_attempts) == (0, 2, 4)
    assert why in sh.stats.last_error


def test_commands_run_without_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    cmds = SlurmCommands(f"true; touch {marker}", "squeue")
    with pytest.raises(SnapshotFailed):
        cmds.run([cmds.scontrol, "show", "node"])
    assert not marker.exists()


def test_auto_picks_json_from_23_02(tmp_path: Path) -> None:
    sc = _tool(tmp_path, "scontrol", 'echo "slurm 23.11.4"\n')
    assert SlurmCommands(sc, "squeue").resolved_form() == "json"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", "ship", "slurm", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env=env,
    )


def test_cli_dry_run_and_user_errors(tmp_path: Path) -> None:
    cmds = _stand_ins(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env["DRAINWATCH_STATE_DIR"] = str(tmp_path / "state")
    r = _cli(
        "--dry-run", "--count", "1", "--scontrol", cmds.scontrol, "--squeue", cmds.squeue, env=env
    )
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 12
    assert "1 iterations, 12 records" in r.stderr
    r = _cli("--dry-run", "--scontrol", str(tmp_path / "nope"), env=env)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"drainwatch ship: --scontrol {tmp_path / 'nope'}: no such executable (give the "
        "client's path)"
    ]
    assert "Traceback" not in r.stderr
    r = _cli(
        "--dry-run",
        "--count",
        "1",
        "--scontrol",
        cmds.scontrol,
        "--squeue",
        "/bin/false",
        "--retries",
        "0",
        env=env,
    )
    assert r.returncode == 1 and "no snapshot could be taken" in r.stderr


def test_json_snapshot_of_23_11(tmp_path: Path) -> None:
    v = CAPTURED.parent / "23.11"
    sc = _tool(
        tmp_path,
        "scontrol",
        f"""case "$*" in
  --version) echo "slurm 23.11.4";;
  "--json show node") cat {v}/scontrol_show_node.json;;
  "--json show reservation") cat {v}/scontrol_show_reservation.json;;
  *) echo "unexpected: $*" >&2; exit 1;;
esac
""",
    )
    sq = _tool(
        tmp_path,
        "squeue",
        f"""[ "$*" = "--all --array --json" ] || exit 1
cat {v}/squeue.json
""",
    )
    cmds = SlurmCommands(sc, sq)
    it = take_snapshot(cmds, cmds.resolved_form(), lambda: 1795473650.0)
    got = {r.node: (r.state, r.rsvlist, r.joblist) for r in it.records}
    assert got["n7"] == ("Idle", ("3", "4"), ())
    assert got["n11"] == ("Idle", ("resv_a",), ())
    assert got["n10"] == ("Down", (), ())
    assert got["n1"] == ("Running", ("3", "4"), ("1",))
