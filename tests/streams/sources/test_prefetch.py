"""The first Moab file cut while a replay starts (streams/sources/prefetch.py): the same
batches, rejects and counts as the source cutting it itself; a run that never reads it, or
fails first, leaves no thread behind and the file closed."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from models.records.nodestatus import Codebook
from streams.driver import RejectLog
from streams.sources import prefetch
from streams.sources.moab import MoabFiles
from streams.sources.readahead import ReadAhead
from tests.golden.make_golden import INPUTS

try:
    import drainwatch_native  # noqa: F401
except ImportError:  # pragma: no cover - depends on the installation
    pytest.skip("no compiled tokenizer: nothing is cut early", allow_module_level=True)


def _run(early: bool, path: Path, tmp: Path, chunk: int) -> tuple[list[list[int]], list[str]]:
    book = Codebook()
    pre = prefetch.start(str(path), chunk, 1 << 20) if early else None
    src = MoabFiles([str(path)], book, chunk, progress=False, early=pre)
    rejects = RejectLog(tmp / f"r{early}.tsv")
    out = [
        np.concatenate([b.ts_ms, b.node, b.state, b.rsv, b.run_row, b.run_job]).tolist()
        for b in src.batches(rejects)
    ]
    return out, [*book.nodes.names, *book.jobs.names, str(src.lines), str(src.ignored)]


@pytest.mark.parametrize("chunk", [1 << 12, 1 << 20])
def test_cut_early_or_not_the_same_batches(tmp_path: Path, chunk: int) -> None:
    path = INPUTS / "moab.log.gz"
    assert _run(True, path, tmp_path, chunk) == _run(False, path, tmp_path, chunk)


def test_a_prefetch_never_read_is_closed_with_its_thread(tmp_path: Path) -> None:
    before = threading.active_count()
    pre = prefetch.start(str(INPUTS / "moab.log.gz"), 1 << 12, 1 << 20)
    assert pre is not None and isinstance(pre.chunks, ReadAhead)
    pre.close()
    pre.close()  # again: nothing to do
    assert threading.active_count() == before and pre.file.closed


def test_a_file_that_does_not_open_is_left_to_the_source(tmp_path: Path) -> None:
    assert prefetch.start(str(tmp_path / "missing.log"), 1 << 20, 1 << 20) is None


def test_a_replay_that_fails_before_reading_closes_what_it_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run that fails after the first file was opened and cut (here its drain run is made to
    raise a user error: an injected failure, named as such) closes the file and the thread."""
    from streams.cli import main
    from streams.commands import replay
    from streams.errors import UserError

    opened: list[prefetch.Prefetch] = []
    start = prefetch.start

    def recorded(*a: object) -> prefetch.Prefetch | None:
        p = start(*a)  # type: ignore[arg-type]
        opened.extend([p] if p is not None else [])
        return p

    def failing(*a: object) -> None:
        raise UserError("injected failure")

    monkeypatch.setattr(prefetch, "start", recorded)
    monkeypatch.setattr(replay, "_drain_run", failing)
    argv = [
        "replay",
        "--format",
        "moab",
        str(INPUTS / "moab.log.gz"),
        "--out",
        str(tmp_path / "out"),
        "--no-progress",
    ]
    assert main(argv) == 2
    assert "injected failure" in capsys.readouterr().err
    assert opened and opened[0].file.closed
    assert not [t for t in threading.enumerate() if t.name == "read-ahead"]
