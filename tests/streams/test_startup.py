"""The command line answers at once: building the parser (every sub-command's options, what
`drainwatch --help` and a mistyped option need) loads none of the heavy libraries; a run loads
them when it starts. bench/bench_startup.py measures the time."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "polars", "asyncio", "faust", "aiokafka", "influxdb_client", "matplotlib")


def _loaded(code: str) -> list[str]:
    show = f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"
    probe = f"import sys\n{code}\n{show}"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return r.stderr.split()


def test_building_the_parser_loads_no_heavy_library() -> None:
    assert _loaded("from streams.cli import build_parser; build_parser()") == []


def test_help_of_every_command_loads_no_heavy_library() -> None:
    for cmd in ("", "replay", "report", "simulate", "worker", "ship", "calibrate"):
        code = (
            "from streams.cli import main\n"
            f"try: main([{cmd!r}, '--help'] if {cmd!r} else ['--help'])\n"
            "except SystemExit: pass"
        )
        assert _loaded(code) == [], cmd


def test_a_run_loads_its_engine_when_it_starts() -> None:
    code = 'from streams.commands import replay\nreplay._engine_run("drain")'
    assert "numpy" in _loaded(code)


def test_a_command_loads_only_its_own_module() -> None:
    """A run parses with its own command's parser only (the other commands' modules cost ~30 ms
    of a replay's start); a mistyped command still gets the full list."""
    code = (
        "from streams.cli import build_parser\n"
        "args = build_parser(['--debug', 'replay', '--format', 'moab', 'x', '--out', 'o'])"
        ".parse_args(['--debug', 'replay', '--format', 'moab', 'x', '--out', 'o'])\n"
        "assert args.command == 'replay' and args.format == 'moab'\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('streams.commands.'))),"
        " file=sys.stderr)"
    )
    r = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}"], capture_output=True, text=True, check=True
    )
    assert r.stderr.split() == ["streams.commands.replay"]
    r = subprocess.run(
        [sys.executable, "-m", "streams.cli", "replya"], capture_output=True, text=True
    )
    assert r.returncode == 2
    assert (
        "choose from 'replay', 'report', 'simulate', 'whatif', 'worker', 'ship', 'calibrate'"
        in r.stderr
    )
