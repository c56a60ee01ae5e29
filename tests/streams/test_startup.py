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
    code = "from streams.commands import replay\nreplay._engine_run(\"drain\")"
    assert "numpy" in _loaded(code)
