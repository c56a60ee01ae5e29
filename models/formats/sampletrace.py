"""The node-sample trace format: JSON lines, one measure of one process per line.

Seed 003 (Emeras et al. 2013) defines the trace's fields (Table 1: Time, JOB ID, PID, Node ID,
then the measure of Table 2) but not a byte layout; the seed's monitor wrote raw /proc values to a
log per job. This is drainwatch's layout of the same fields, with the seed's names::

    {"ts": 1709302348.0, "job": "12345", "pid": 4242, "node": "n001", "command": "python",
     "vmPeak": 123456, "vmSize": 120000, "vmRss": 65536, "vmSwap": 0,
     "syscr": 10, "syscw": 20, "read_bytes": 4096, "write_bytes": 1048576,
     "core": 99.5, "receive": 123, "transmit": 456,
     "start": 1709302300.0, "cores": 4, "class": "normal", "wchar": 1050000}

``ts`` and ``start`` are Unix seconds; memory in KiB; I/O and network are cumulative counters
(bytes / syscalls) as /proc gives them; ``core`` is % of one core. ``start``, ``cores``, ``class``,
``fs`` (per file system ``[write, read]`` speeds, for sources that give rates, e.g.
``{"scratch": [666.5, 0.0]}`` in MiB/s) and ``wchar`` (cumulative bytes passed to write calls,
/proc/<pid>/io; absent = unknown, as in traces written before it was kept) are optional.
``streams.ship.sampler`` writes this format; :func:`parse_trace` reads it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from models.jsonbytes import json_bytes
from models.records.nodesample import (
    IMPLAUSIBLE,
    MAX_CORE_PCT,
    MAX_CORES,
    MAX_FS_RATE,
    MAX_MEMORY_KB,
    NodeSample,
)
from models.records.reject import RecordError, Reject

_INT_FIELDS = (
    "pid",
    "vmPeak",
    "vmSize",
    "vmRss",
    "vmSwap",
    "syscr",
    "syscw",
    "read_bytes",
    "write_bytes",
    "receive",
    "transmit",
)


# Largest integer value: a pid, counter or size must fit the analytics' int64 / float columns
# (JSON gives unsigned 64-bit integers too)
MAX_INT = 2**63 - 1


class SampleTraceError(RecordError):
    """A node-sample trace record that cannot be used (see models.records.reject.RecordError)."""


def sample_to_dict(s: NodeSample) -> dict[str, object]:
    d: dict[str, object] = {
        "ts": s.ts,
        "job": s.job,
        "pid": s.pid,
        "node": s.node,
        "command": s.command,
        "vmPeak": s.vm_peak_kb,
        "vmSize": s.vm_size_kb,
        "vmRss": s.vm_rss_kb,
        "vmSwap": s.vm_swap_kb,
        "syscr": s.syscr,
        "syscw": s.syscw,
        "read_bytes": s.read_bytes,
        "write_bytes": s.write_bytes,
        "core": s.core,
        "receive": s.receive,
        "transmit": s.transmit,
    }
    if s.start:
        d["start"] = s.start
    if s.cores:
        d["cores"] = s.cores
    if s.job_class:
        d["class"] = s.job_class
    if s.fs_rates:
        d["fs"] = {name: [w, r] for name, w, r in s.fs_rates}
    if s.wchar is not None:
        d["wchar"] = s.wchar
    return d


def dumps(s: NodeSample) -> bytes:
    """One trace line (no newline), in a block of its own size: the shippers keep a batch of
    them (models.jsonbytes)."""
    return json_bytes(sample_to_dict(s))


def parse_sample(line: str | bytes) -> NodeSample:
    """One trace line -> NodeSample, or :class:`SampleTraceError` with a reason."""
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise SampleTraceError("bad_json", str(e)) from None
    return _plain(d) or _checked(d)


_FLOAT_TYPES = (float, int)
_FIELDS = NodeSample.__slots__


def sample_row(line: str | bytes) -> list[Any]:
    """One trace line -> its NodeSample's fields in order, checked as :func:`parse_sample`
    checks them (the same reasons): the live path forwards samples between its own agents as
    these rows (JSON arrays), without building the record twice."""
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise SampleTraceError("bad_json", str(e)) from None
    row = _plain_fields(d)
    if row is None:
        s = _checked(d)
        row = [getattr(s, f) for f in _FIELDS]
    return row


def sample_from_row(row: list[Any]) -> NodeSample:
    """A NodeSample from :func:`sample_row`'s row as read back from JSON (checked already)."""
    fs = row[19]
    if fs.__class__ is not tuple:
        row[19] = tuple((n, w, r) for n, w, r in fs)
    return NodeSample(*row)


def _plain(d: object) -> NodeSample | None:
    row = _plain_fields(d)
    return None if row is None else NodeSample(*row)


def _plain_fields(d: object) -> list[Any] | None:
    """The common line (every value of its own JSON type and in range, no ``fs``) with plain
    type tests; None for anything else, which :func:`_checked` decides (it accepts the same
    lines with the same result, and more: integral floats, numeric job ids, per-file-system
    speeds)."""
    if type(d) is not dict:
        return None
    g = d.get
    ts: Any = g("ts")
    job, node = g("job"), g("node")
    if type(job) is not str or not job or type(node) is not str or not node or "fs" in d:
        return None
    ints = [g(k, 0) for k in _INT_FIELDS]
    for v in ints:
        if type(v) is not int or not 0 <= v <= MAX_INT:
            return None
    core, start, cores = g("core", 0.0), g("start", 0.0), g("cores", 0)
    for v in (ts, core, start):
        if type(v) not in _FLOAT_TYPES or not math.isfinite(v):  # bool is not int here
            return None
    if type(cores) is not int or not 0 <= cores <= MAX_INT:
        return None
    wchar = g("wchar")
    if "wchar" in d and (type(wchar) is not int or not 0 <= wchar <= MAX_INT):
        return None
    command, cls = g("command", ""), g("class", "")
    if type(command) is not str or type(cls) is not str:
        return None
    pid, peak, size, rss, swap, syscr, syscw, rb, wb, rx, tx = ints
    if (
        not 0 <= core <= MAX_CORE_PCT
        or cores > MAX_CORES
        or max(peak, size, rss, swap) > (MAX_MEMORY_KB)
    ):
        return None
    return [
        float(ts),
        job,
        pid,
        node,
        command,
        peak,
        size,
        rss,
        swap,
        syscr,
        syscw,
        rb,
        wb,
        float(core),
        rx,
        tx,
        float(start),
        cores,
        cls,
        (),
        wchar,
    ]


def _checked(d: object) -> NodeSample:
    """Every check, each failure a reason (the definition of a good line)."""
    if not isinstance(d, dict):
        raise SampleTraceError("not_object")
    for k in ("ts", "job", "pid", "node"):
        if k not in d:
            raise SampleTraceError("missing_field", k)
    ints: dict[str, int] = {}
    for k in _INT_FIELDS:
        v = d.get(k, 0)
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                raise SampleTraceError("bad_number", f"{k}={v!r}")
        if v < 0:
            raise SampleTraceError("negative", f"{k}={v}")
        if v > MAX_INT:
            raise SampleTraceError("bad_number", f"{k}={v}")
        ints[k] = v
    wchar = _optional_int(d, "wchar")
    floats: dict[str, float] = {}
    for k in ("ts", "core", "start"):
        v = d.get(k, 0.0)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise SampleTraceError("bad_number", f"{k}={v!r}")
        floats[k] = float(v)
    if floats["core"] < 0:
        raise SampleTraceError("negative", f"core={floats['core']}")
    cores = d.get("cores", 0)
    if isinstance(cores, bool) or not isinstance(cores, int) or not 0 <= cores <= MAX_INT:
        raise SampleTraceError("bad_number", f"cores={cores!r}")
    fs_rates: list[tuple[str, float, float]] = []
    fs = d.get("fs", {})
    if not isinstance(fs, dict):
        raise SampleTraceError("bad_fs", repr(fs))
    for name, wr in fs.items():
        if (
            not isinstance(wr, list)
            or len(wr) != 2
            or not all(
                isinstance(x, int | float)
                and not isinstance(x, bool)
                and math.isfinite(x)
                and x >= 0
                for x in wr
            )
        ):
            raise SampleTraceError("bad_fs", f"{name}={wr!r}")
        fs_rates.append((str(name), float(wr[0]), float(wr[1])))
    _check_physical(ints, floats["core"], cores, fs_rates)
    job, node = d["job"], d["node"]
    if not isinstance(job, str | int) or isinstance(job, bool) or str(job) == "":
        raise SampleTraceError("bad_job", repr(job))
    if not isinstance(node, str) or not node:
        raise SampleTraceError("bad_node", repr(node))
    return NodeSample(
        ts=floats["ts"],
        job=str(job),
        pid=ints["pid"],
        node=node,
        command=str(d.get("command", "")),
        vm_peak_kb=ints["vmPeak"],
        vm_size_kb=ints["vmSize"],
        vm_rss_kb=ints["vmRss"],
        vm_swap_kb=ints["vmSwap"],
        syscr=ints["syscr"],
        syscw=ints["syscw"],
        read_bytes=ints["read_bytes"],
        write_bytes=ints["write_bytes"],
        core=floats["core"],
        receive=ints["receive"],
        transmit=ints["transmit"],
        start=floats["start"],
        cores=cores,
        job_class=str(d.get("class", "")),
        fs_rates=tuple(fs_rates),
        wchar=wchar,
    )


def _optional_int(d: dict[str, object], k: str) -> int | None:
    """An optional counter: absent -> None, else checked as the other counters are."""
    if k not in d:
        return None
    v = d[k]
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise SampleTraceError("bad_number", f"{k}={v!r}")
    if v < 0:
        raise SampleTraceError("negative", f"{k}={v}")
    if v > MAX_INT:
        raise SampleTraceError("bad_number", f"{k}={v}")
    return v


def _check_physical(
    ints: dict[str, int], core: float, cores: int, fs: list[tuple[str, float, float]]
) -> None:
    """Values no machine produces (models.records.nodesample bounds): ``implausible_value``."""
    if core > MAX_CORE_PCT:
        raise SampleTraceError(IMPLAUSIBLE, f"core={core:g} % (at most {MAX_CORE_PCT:g})")
    if cores > MAX_CORES:
        raise SampleTraceError(IMPLAUSIBLE, f"cores={cores} (at most {MAX_CORES})")
    for k in ("vmPeak", "vmSize", "vmRss", "vmSwap"):
        if ints[k] > MAX_MEMORY_KB:
            raise SampleTraceError(IMPLAUSIBLE, f"{k}={ints[k]} KiB (at most {MAX_MEMORY_KB})")
    for name, w, r in fs:
        if w > MAX_FS_RATE or r > MAX_FS_RATE:
            raise SampleTraceError(IMPLAUSIBLE, f"fs {name} rate {max(w, r):g}/s (at most 1e7)")


def parse_trace(
    lines: Iterable[str | bytes],
    source: str = "-",
    rejects: list[Reject] | None = None,
    ignored: Counter[str] | None = None,
) -> Iterator[NodeSample]:
    """Good samples of a trace; bad lines go to ``rejects`` (if given) and never stop the read;
    blank lines are counted in ``ignored`` (if given) as ``blank``."""
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            if ignored is not None:
                ignored["blank"] += 1
            continue
        try:
            yield parse_sample(line)
        except SampleTraceError as e:
            if rejects is not None:
                text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
                rejects.append(Reject(e.reason, source, lineno, text))
