"""The one flow: sources -> stages -> sinks, with progress, rejects, summary and atomic commit.

``replay`` builds feeds (a source and the stages it feeds) and calls :func:`run`; the worker will
feed the same stages from Kafka. Written once here: the loop, the reject log, the summary with
the same keys for every engine, the commit of every sink (or the abort that leaves the previous
outputs untouched when anything fails or the user interrupts). The contracts it drives (Source,
Stage, Sink, InputStats, the reject log) are in :mod:`streams.contracts`; ``InputStats`` and
``Source`` are re-exported here, and :class:`RejectLog` adds the ``--rejects`` file.
"""

from __future__ import annotations

import gc
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from streams import contracts
from streams.atomic import OutputSet
from streams.contracts import InputStats, Sink, Source, Stage, instant_ms
from streams.sinks.files import RejectFile

__all__ = ["Feed", "InputStats", "RejectLog", "Run", "Source", "run", "signals_held"]

# the signals that end a run: its abort leaves the previous outputs (streams/cli.py)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class RejectLog(contracts.RejectLog):
    """A run's reject log (:class:`streams.contracts.RejectLog`) whose rejects also go to
    ``path`` (``--rejects``) if given: a RejectFile, committed or aborted with the outputs."""

    file: RejectFile | None

    def __init__(self, path: str | Path | None = None, outputs: OutputSet | None = None) -> None:
        super().__init__(RejectFile(path, outputs) if path else None)


@dataclass(slots=True)
class Feed:
    source: Source[RejectLog]
    stages: Sequence[Stage[Any]]


@dataclass(slots=True)
class Run:
    engine: str  # drain | jobs | samples: names the summary file
    fmt: str
    tz: str
    feeds: Sequence[Feed]
    settings: dict[str, Any] = field(default_factory=dict)


def run(r: Run, sinks: Sequence[Sink], rejects: RejectLog) -> dict[str, Any]:
    """Drive every feed through its stages into the sinks; commit and return the summary.

    The cyclic garbage collector is paused meanwhile: stages create no reference cycles, and
    with millions of live records its full passes would scan them all again and again (the
    figures are in the README's benchmark table)."""
    was = gc.isenabled()
    gc.disable()
    try:
        return _run(r, sinks, rejects)
    finally:
        if was:
            gc.enable()


def _run(r: Run, sinks: Sequence[Sink], rejects: RejectLog) -> dict[str, Any]:
    t0 = time.perf_counter()
    stages: list[Stage[Any]] = list(dict.fromkeys(s for f in r.feeds for s in f.stages))
    rows: dict[str, int] = {}
    try:
        for st in stages:
            for t in st.tables():
                rows.setdefault(t.file, 0)
                for sink in sinks:
                    sink.declare(t)
        step_s: dict[str, float] = dict.fromkeys((st.name for st in stages), 0.0)
        timings: dict[str, float] = {}
        for feed in r.feeds:
            t_feed = time.perf_counter()
            stepping = 0.0
            for batch in feed.source.batches(rejects):
                for st in feed.stages:
                    t_step = time.perf_counter()
                    _emit(st.step(batch), sinks, rows)
                    dt = time.perf_counter() - t_step
                    step_s[st.name] += dt
                    stepping += dt
            timings[f"read_{feed.stages[0].name}_input"] = round(
                time.perf_counter() - t_feed - stepping, 3
            )
        for name, s in step_s.items():
            timings[f"step_{name}"] = round(s, 3)
        t_fin = time.perf_counter()
        for st in stages:
            _emit(st.finish(), sinks, rows)
        timings["finish"] = round(time.perf_counter() - t_fin, 3)
        timings["total"] = round(time.perf_counter() - t0, 3)
        summary = _summary(r, stages, rejects, timings, rows)
        data = orjson.dumps(
            summary,
            option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY,
        )
        for sink in sinks:
            sink.document(f"summary_{r.engine}.json", data + b"\n")
        with signals_held():
            for sink in sinks:
                sink.commit()
            if rejects.file is not None:
                rejects.file.commit()
        return summary
    except BaseException:
        with signals_held():
            for sink in sinks:
                sink.abort()
            if rejects.file is not None:
                rejects.file.abort()
        raise


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP are ignored while the outputs are committed or cleaned up
    (renames and removals that take milliseconds): a stop between two renames would leave part
    of the new set beside part of the old one, or a staging directory behind. One that comes
    meanwhile is dropped; the commit completes or the abort has removed everything. Only the
    main thread can set signal handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, signal.SIG_DFL if h is None else h)


def _emit(outputs: Any, sinks: Sequence[Sink], rows: dict[str, int]) -> None:
    for target, payload in outputs:
        if isinstance(target, str):
            rows.setdefault(target, 0)
            for sink in sinks:
                sink.document(target, payload)
        else:
            rows[target.file] = rows.get(target.file, 0) + len(payload)
            for sink in sinks:
                sink.write(target, payload)


def input_figures(inputs: Sequence[InputStats], rejects: RejectLog) -> dict[str, Any]:
    """What a run read, for its summary: per input, the first and last event time, the lines,
    records and rejects in all."""
    firsts = [i.first_ms for i in inputs if i.first_ms is not None]
    lasts = [i.last_ms for i in inputs if i.last_ms is not None]
    return {
        "inputs": [i.as_dict() for i in inputs],
        "first": instant_ms(min(firsts)) if firsts else None,
        "last": instant_ms(max(lasts)) if lasts else None,
        "lines": sum(i.lines or 0 for i in inputs),
        "ignored": sum(i.ignored for i in inputs),
        "records": sum(i.records for i in inputs),
        "rejected": rejects.total,
        "rejected_by_reason": dict(sorted(rejects.by_reason.items())),
    }


def _summary(
    r: Run,
    stages: Sequence[Stage[Any]],
    rejects: RejectLog,
    timings: dict[str, float],
    rows: dict[str, int],
) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    for st in stages:
        record_counts = getattr(st, "record_counts", None)
        if record_counts is not None:
            counts.update(record_counts())
    out: dict[str, Any] = {
        "engine": r.engine,
        "format": r.fmt,
        "tz": r.tz,
        **input_figures([i for f in r.feeds for i in f.source.inputs], rejects),
        "duplicates": counts["duplicates"],
        "out_of_order": counts["out_of_order"],
        "reordered": counts["reordered"],
        "late": counts["late"],
        "settings": r.settings,
        "outputs": dict(sorted(rows.items())),
    }
    for st in stages:
        out[st.name] = st.summary()
    out["timings_s"] = timings
    return out
