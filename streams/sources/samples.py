"""Node-sample inputs: JSON-lines traces (MB) and LLview job directories (MiB).

:class:`SampleTraceFiles` streams each file's lines and yields lists of at most ``batch``
NodeSamples (memory flat in the file size; a line longer than ``max_line_bytes`` is rejected as
``line_too_long`` without being held whole; every line is a sample, a reject or, if blank,
ignored); :class:`LlviewDirs` yields one :class:`LlviewJob` (its parsed series) per job directory.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from models.formats import llview
from models.formats.sampletrace import dumps, parse_trace
from models.records.nodesample import NodeSample
from models.records.plausible import TimeBounds, keep_plausible
from models.records.reject import Reject
from streams.contracts import InputStats, LlviewJob, RejectLog
from streams.errors import UserError, check_regular, open_regular
from streams.sources.files import MAX_LINE_BYTES, check_format, open_binary, read_text, reading
from streams.sources.jobevents import text_lines, too_long, with_lines

BATCH = 65_536  # samples per batch


class SampleTraceFiles:
    """Samples whose time is outside ``bounds`` are rejected (``implausible_time``; the jump
    rule, ``time_jump``, looks at one batch at a time)."""

    def __init__(
        self,
        paths: list[str],
        bounds: TimeBounds | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        batch: int = BATCH,
    ) -> None:
        for p in paths:  # an archive or unreadable compression is refused before a line is read
            check_format(p)
        self.bounds = bounds or TimeBounds()
        self.paths = paths
        self.max_line_bytes = max_line_bytes
        self.batch = batch
        self.inputs = [InputStats(p, bytes=os.path.getsize(p)) for p in paths]

    def batches(self, rejects: RejectLog) -> Iterator[list[NodeSample]]:
        for p, st in zip(self.paths, self.inputs, strict=True):
            bad: list[Reject] = []
            skipped: Counter[str] = Counter()  # blank lines, the too-long ones among them
            long_lines = 0
            with reading(p), open_binary(p) as f:
                lines = text_lines(f, p, bad, self.max_line_bytes, st)
                at: list[int] = []  # each sample's line, for its reject
                parsed = with_lines(parse_trace(lines, p, bad, skipped), st, at)
                while chunk := list(itertools.islice(parsed, self.batch)):
                    samples = keep_plausible(
                        chunk, self.bounds, p, lambda smp: dumps(smp).decode(), bad, at
                    )
                    at.clear()
                    long_lines += too_long(bad)
                    st.tally([s.ts for s in samples], bad, rejects)
                    bad.clear()
                    if samples:
                        yield samples
            st.ignored = skipped.total() - long_lines - too_long(bad)
            st.tally([], bad, rejects)  # rejects after the last sample


def llview_files(paths: list[str]) -> list[dict[str, Path]]:
    """Group LLview files by job directory: {'loadmem', 'fs', 'fs:<name>', 'pcore', 'report'}."""
    groups: dict[Path, dict[str, Path]] = {}
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.iterdir()) if p.is_dir() else [p])
    for f in files:
        g = groups.setdefault(f.parent, {})
        n = f.name
        if n.startswith("LoadMem_"):
            g["loadmem"] = f
        elif n.startswith("FSusage_") and n.endswith("_all_node.dat"):
            g["fs"] = f
        elif n.startswith("FSusage_") and n.endswith("_node.dat"):
            # FSusage_<job>_<file system>_node.dat
            g["fs:" + n[len("FSusage_") : -len("_node.dat")].split("_", 1)[-1]] = f
        elif n.startswith("PCOREusage_"):
            g["pcore"] = f
        elif n.startswith("jobreport_") and n.endswith(".json"):
            g["report"] = f
    return [g for g in groups.values() if "loadmem" in g]


class LlviewDirs:
    def __init__(self, paths: list[str], cores_per_node: float | None) -> None:
        self.groups = llview_files(paths)
        if not self.groups:
            raise UserError("no LoadMem_<job>_node.dat among the inputs")
        self.cores_per_node = cores_per_node
        # every member a regular file before any is read (a FIFO would block, a link to a
        # device never end); opened with the same check (open_binary, open_regular)
        self.inputs = [
            InputStats(
                str(g["loadmem"].parent), bytes=sum(check_regular(f).st_size for f in g.values())
            )
            for g in self.groups
        ]

    def batches(self, rejects: RejectLog) -> Iterator[LlviewJob]:
        for g, st in zip(self.groups, self.inputs, strict=True):
            bad: list[Reject] = []

            def series(
                key: str, g: dict[str, Path] = g, bad: list[Reject] = bad
            ) -> llview.LlviewSeries:
                with reading(g[key]):
                    text = read_text(g[key])
                try:
                    return llview.parse_series(text, str(g[key]), bad)
                except ValueError as e:  # no usable header: not an LLview series at all
                    raise UserError(f"not an LLview series: {e}") from None

            lm = series("loadmem")
            cpn = self.cores_per_node
            if cpn is None and "pcore" in g:
                per = llview.cores_from_pcore(series("pcore"))
                cpn = max(per.values()) if per else None
            if cpn is None:
                raise UserError(
                    f"{g['loadmem'].parent}: cores per node unknown (no PCOREusage file): "
                    "give --cores-per-node"
                )
            cls = "normal"
            if "report" in g:
                try:
                    with open_regular(g["report"]) as f:
                        cls = llview.parse_job_report(f.read()).queue or cls
                except ValueError as e:  # orjson.JSONDecodeError is a ValueError
                    raise UserError(f"{g['report']}: not an LLview job report: {e}") from None
            job = LlviewJob(
                g["loadmem"].parent,
                lm,
                cpn,
                cls,
                series("fs") if "fs" in g else None,
                {k[3:]: series(k) for k in sorted(k for k in g if k.startswith("fs:"))},
            )
            st.tally(lm.num["ts"].tolist(), bad, rejects)
            yield job
