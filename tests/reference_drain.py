"""Slow, obviously-correct drain accounting (seed 000), line by line with dicts.

It shares no code with models.drain.accountant / models.formats.moab: its own regex, datetime
parsing and a brute-force walk over quarter-hours to find local hour edges. The fast path must
equal it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

KNOWN = ["Down", "Idle", "Busy", "Running", "Drained", "Draining"]
LINE = re.compile(
    r"^(\S+) \S+ \S+\s+Node '([^']*)' status: state='([^']*)'"
    r" rsvlist='([^']*)' joblist='([^']*)'\s*$"
)
Q = 15 * 60 * 1000


def ids(text: str) -> list[str]:
    t = text.strip()
    if t == "" or t.lower() == "none":
        return []
    return [x.strip() for x in t.split(",") if x.strip()]


def ts_ms(text: str) -> int | None:
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)$", text)
    if not m:
        return None
    try:
        base = datetime.fromisoformat(m.group(1))
    except ValueError:
        return None
    off = m.group(3)
    if off == "Z":
        off_ms = 0
    else:
        sign = -1 if off[0] == "-" else 1
        hh, mm = int(off[1:3]), int(off[-2:])
        if hh > 23 or mm > 59:
            return None
        off_ms = sign * (hh * 3600 + mm * 60) * 1000
    frac = int((m.group(2) or "0")[:3].ljust(3, "0"))
    naive_ms = int(base.replace(tzinfo=UTC).timestamp()) * 1000 + frac
    return naive_ms - off_ms


def is_hour_edge(t: int, tz: ZoneInfo) -> bool:
    d = datetime.fromtimestamp(t / 1000, tz=tz)
    return d.minute == 0 and d.second == 0


def is_day_edge(t: int, tz: ZoneInfo) -> bool:
    d = datetime.fromtimestamp(t / 1000, tz=tz)
    return d.hour == 0 and d.minute == 0 and d.second == 0


def hour_start(t: int, tz: ZoneInfo) -> int:
    c = t - t % Q
    while not is_hour_edge(c, tz):
        c -= Q
    return c


def day_start(t: int, tz: ZoneInfo) -> int:
    c = hour_start(t, tz)
    while not is_day_edge(c, tz):
        c -= Q
    return c


@dataclass
class RefResult:
    node_state: dict = field(default_factory=dict)  # (node, state, has_rsv, has_job) -> ms
    hour: dict = field(default_factory=dict)  # hour start -> {cat: ms}
    hour_nodes: dict = field(default_factory=dict)  # hour start -> set(nodes)
    day_nodes: dict = field(default_factory=dict)
    job_drain: dict = field(default_factory=dict)  # job -> ms
    job_first: dict = field(default_factory=dict)
    job_last: dict = field(default_factory=dict)
    job_nodes: dict = field(default_factory=dict)  # job -> set(nodes)
    job_run_nodes: dict = field(default_factory=dict)
    job_run_first: dict = field(default_factory=dict)
    job_run_last: dict = field(default_factory=dict)
    rejected: int = 0
    ignored: int = 0
    duplicates: int = 0
    out_of_order: int = 0


def replay(lines: list[str], tz: str = "UTC", max_gap_ms: int = 600_000) -> RefResult:
    zone = ZoneInfo(tz)
    res = RefResult()
    state_names: dict[str, str] = {s.lower(): s for s in KNOWN}
    last: dict[str, tuple] = {}
    for line in lines:
        text = line.rstrip("\r\n")
        if " status: " not in text or "Node '" not in text:
            if text.strip():
                res.ignored += 1
            else:
                res.rejected += 1
            continue
        m = LINE.match(text)
        t = ts_ms(m.group(1)) if m else None
        if m is None or t is None or m.group(2) == "" or m.group(3).strip() == "":
            res.rejected += 1
            continue
        node = m.group(2)
        st_raw = m.group(3).strip()
        st = state_names.setdefault(st_raw.lower(), st_raw)
        rsv = ids(m.group(4))
        jobs = ids(m.group(5))
        for j in jobs:
            res.job_run_nodes.setdefault(j, set()).add(node)
            res.job_run_first[j] = min(res.job_run_first.get(j, t), t)
            res.job_run_last[j] = max(res.job_run_last.get(j, t), t)
        prev = last.get(node)
        if prev is not None and t <= prev[0]:
            if t == prev[0]:
                res.duplicates += 1
            else:
                res.out_of_order += 1
            continue
        last[node] = (t, st, rsv[0] if rsv else None, bool(rsv), bool(jobs))
        if prev is None:
            continue
        p_t, p_st, p_rsv, p_hr, p_hj = prev
        gap = t - p_t > max_gap_ms
        # split [p_t, t) at local hour edges, walking quarter-hours
        cuts = [p_t]
        c = p_t - p_t % Q + Q
        while c < t:
            if is_hour_edge(c, zone):
                cuts.append(c)
            c += Q
        cuts.append(t)
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            h = hour_start(a, zone)
            cat = "gap" if gap else (p_st, p_hr, p_hj)
            res.hour.setdefault(h, {})
            res.hour[h][cat] = res.hour[h].get(cat, 0) + (b - a)
            res.hour_nodes.setdefault(h, set()).add(node)
            res.day_nodes.setdefault(day_start(a, zone), set()).add(node)
            if gap:
                continue
            k = (node, p_st, p_hr, p_hj)
            res.node_state[k] = res.node_state.get(k, 0) + (b - a)
            if p_st == "Idle" and p_rsv is not None:
                res.job_drain[p_rsv] = res.job_drain.get(p_rsv, 0) + (b - a)
                res.job_first[p_rsv] = min(res.job_first.get(p_rsv, a), a)
                res.job_last[p_rsv] = max(res.job_last.get(p_rsv, b), b)
                res.job_nodes.setdefault(p_rsv, set()).add(node)
    return res


def summarise_hours(res: RefResult) -> dict[int, tuple[int, int, int, int, int]]:
    """hour start -> (accounted, drain, unallocated idle, down, unaccounted) node-ms."""
    out = {}
    for h, cats in res.hour.items():
        acc = sum(v for k, v in cats.items() if k != "gap")
        drain = sum(v for k, v in cats.items() if k != "gap" and k[0] == "Idle" and k[1])
        idle_u = sum(v for k, v in cats.items() if k != "gap" and k[0] == "Idle" and not k[1])
        down = sum(v for k, v in cats.items() if k != "gap" and k[0] == "Down")
        out[h] = (acc, drain, idle_u, down, cats.get("gap", 0))
    return out
