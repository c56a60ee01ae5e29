"""Property: no run ever writes to a path it reads (issue class 1).

Random layouts of one input log, its symbolic and hard links, and random ``--out``,
``--rejects`` and ``--report`` choices among the same names; the real command runs (in
process). Whatever it answers, every file it read keeps its bytes and its inode; a user error
(exit 2) leaves the whole tree as it was; no choice makes it fail otherwise.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.cli import main
from tests.badinput import inputs as IN
from tests.badinput.test_outputs import snapshot

LOG = b"".join(IN.MOAB_LINES[: 40 * 20])
DIRS = ["", "o", "o/d"]
NAMES = ["in.log", "drain_daily.csv", "summary_drain.json", "r.tsv", "node_states.csv"]
PLACES = [f"{d}/{n}".lstrip("/") for d in DIRS for n in NAMES]

layouts = st.fixed_dictionaries(
    {
        "log": st.sampled_from(PLACES),
        "links": st.lists(
            st.tuples(st.sampled_from(["sym", "hard"]), st.sampled_from(PLACES)), max_size=3
        ),
        "earlier": st.booleans(),  # an earlier run's set in o
        "input": st.integers(0, 3),  # the log or one of its links
        "out": st.sampled_from(DIRS[1:]),
        "rejects": st.none() | st.sampled_from(PLACES),
        "report": st.booleans(),
    }
)


def _lay_out(root: Path, lay: dict) -> list[str]:
    """The files of the layout; the names by which the log can be given."""
    (root / lay["log"]).parent.mkdir(parents=True, exist_ok=True)
    (root / lay["log"]).write_bytes(LOG)
    names = [lay["log"]]
    for kind, place in lay["links"]:
        p = root / place
        if os.path.lexists(p):
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        if kind == "sym":
            os.symlink(os.path.relpath(root / lay["log"], p.parent), p)
        else:
            os.link(root / lay["log"], p)
        names.append(place)
    return names


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lay=layouts)
def test_no_run_writes_a_path_it_reads(lay: dict) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        names = _lay_out(root, lay)
        cwd = os.getcwd()
        os.chdir(root)
        try:
            if lay["earlier"]:
                main(["replay", "--format", "moab", names[0], "--out", "o", "--no-progress"])
            given_as = names[lay["input"] % len(names)]
            real = os.path.realpath(given_as)
            ident = (os.stat(real).st_dev, os.stat(real).st_ino)
            before = snapshot(root)
            argv = ["replay", "--format", "moab", given_as, "--out", lay["out"], "--no-progress"]
            if lay["rejects"] is not None:
                argv += ["--rejects", lay["rejects"]]
            if lay["report"]:
                argv.append("--report")
            code = main(argv)
        finally:
            os.chdir(cwd)
        assert code in (0, 2), (code, argv)
        st_after = os.stat(real)
        assert (st_after.st_dev, st_after.st_ino) == ident, "the input was replaced"
        assert Path(real).read_bytes() == LOG, "the input changed"
        if code == 2:
            assert snapshot(root) == before, "a user error changed a file"
