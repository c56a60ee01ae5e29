"""Slurm hostlist expressions: ``cpn-f13-03-[01-02],cpn-f13-04-[01-02]`` <-> host names.

Semantics follow Slurm's hostlist (``scontrol show hostnames``):

- top-level commas separate host expressions; commas inside ``[...]`` separate ranges;
- a range is ``lo`` or ``lo-hi`` (decimal, ``lo <= hi``); every number of the range is printed
  zero-padded to the number of digits written for ``lo`` (``[01-10]`` -> 01 ... 10,
  ``[1-10]`` -> 1 ... 10, ``[001-3]`` -> 001 002 003);
- several bracket groups in one name give their cartesian product, leftmost group outermost
  (``rack[1-2]-node[01-02]`` -> rack1-node01, rack1-node02, rack2-node01, rack2-node02);
- order and duplicates are kept; ``None assigned`` (sacct, job never ran) and ``""`` give ``[]``.

Errors raise :class:`HostlistError` (a ValueError) with a short ``reason`` key.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from models.records.reject import RecordError

# Largest number of hosts one range may expand to (Slurm's MAX_RANGE is 64 Ki as well).
MAX_RANGE = 1 << 16
# Largest number of hosts one whole expression may expand to: more than any machine has (the
# largest have ~160 Ki nodes); a 2.7 KB expression of 200 such ranges would otherwise be 13 M
# names and gigabytes. Checked after each top-level part, so memory stays within one range more.
MAX_HOSTS = 1 << 18

_EMPTY = frozenset({"", "none assigned", "(null)", "none"})
_LAST_NUMBER = re.compile(r"^(.*?)([0-9]+)([^0-9]*)$")  # ASCII digits, as expanded
# a range bound: ASCII digits as Slurm reads them (str.isdigit() also takes '²', which int()
# refuses); 64 digits at most, so int() never meets its 4300-digit limit
_NUMBER = re.compile(r"[0-9]{1,64}")


class HostlistError(RecordError):
    """A hostlist expression that cannot be expanded; ``reason`` is a short stable key."""


def _split_top(expr: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in expr:
        if ch == "[":
            if depth:
                raise HostlistError("nested_bracket", expr)
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError("unbalanced_bracket", expr)
            depth = 0
        elif ch == "," and not depth:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if depth:
        raise HostlistError("unbalanced_bracket", expr)
    parts.append("".join(cur))
    return parts


def _expand_ranges(body: str, expr: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        item = item.strip()
        if not item:
            raise HostlistError("empty_range", expr)
        lo_s, dash, hi_s = item.partition("-")
        if not _NUMBER.fullmatch(lo_s) or (dash and not _NUMBER.fullmatch(hi_s)):
            raise HostlistError("bad_range", item)
        lo = int(lo_s)
        hi = int(hi_s) if dash else lo
        if hi < lo:
            raise HostlistError("reversed_range", item)
        # the whole bracket, not each range: a name expands to at most MAX_RANGE hosts anyway,
        # and 'a[0-65535,0-65535,...]' must not build millions of names before it is refused
        if len(out) + hi - lo + 1 > MAX_RANGE:
            raise HostlistError("range_too_large", item)
        width = len(lo_s)
        out.extend(f"{n:0{width}d}" for n in range(lo, hi + 1))
    return out


def _expand_one(name: str, expr: str) -> list[str]:
    name = name.strip()
    if not name:
        raise HostlistError("empty_host", expr)
    if "[" not in name:
        if "]" in name:
            raise HostlistError("unbalanced_bracket", expr)
        return [name]
    # Alternate literal text and bracket bodies: lit0 [b0] lit1 [b1] ... litN
    pieces: list[list[str]] = []
    pos = 0
    while True:
        i = name.find("[", pos)
        if i < 0:
            pieces.append([name[pos:]])
            break
        j = name.find("]", i)
        if j < 0:
            raise HostlistError("unbalanced_bracket", expr)
        pieces.append([name[pos:i]])
        pieces.append(_expand_ranges(name[i + 1 : j], expr))
        pos = j + 1
    total = 1
    for p in pieces:
        total *= len(p)
    if total > MAX_RANGE:
        raise HostlistError("range_too_large", name)
    return ["".join(t) for t in itertools.product(*pieces)]


def expand_hostlist(expr: str | None, max_hosts: int = MAX_HOSTS) -> list[str]:
    """All host names of a Slurm hostlist expression, in order (see module docstring); more than
    ``max_hosts`` of them raise ``hostlist_too_large``."""
    if expr is None:
        return []
    s = expr.strip()
    if s.lower() in _EMPTY:
        return []
    hosts: list[str] = []
    for part in _split_top(s):
        hosts.extend(_expand_one(part, s))
        if len(hosts) > max_hosts:
            raise HostlistError("hostlist_too_large", s[:200])
    return hosts


def _fmt_range(lo_s: str, hi_s: str) -> str:
    return lo_s if lo_s == hi_s else f"{lo_s}-{hi_s}"


def compress_hostlist(hosts: Iterable[str]) -> str:
    """A hostlist expression for ``hosts`` that expands back to exactly the same list (order and
    duplicates kept): adjacent names that differ only in their last number are bracketed, and
    consecutive numbers of the same printed width become ``lo-hi`` ranges."""
    groups: list[tuple[str, str, list[str]]] = []  # (prefix, suffix, [digit strings])
    plain: list[tuple[int, str]] = []
    order: list[tuple[str, int]] = []
    for h in hosts:
        if not h or any(c in h for c in "[],") or h != h.strip():
            raise HostlistError("bad_host_name", repr(h))
        m = _LAST_NUMBER.match(h)
        if m is None:
            plain.append((len(order), h))
            order.append(("plain", len(plain) - 1))
            continue
        pre, num, suf = m.groups()
        if order and order[-1][0] == "group":
            g = groups[order[-1][1]]
            if g[0] == pre and g[1] == suf:
                g[2].append(num)
                continue
        groups.append((pre, suf, [num]))
        order.append(("group", len(groups) - 1))

    out: list[str] = []
    for kind, idx in order:
        if kind == "plain":
            out.append(plain[idx][1])
            continue
        pre, suf, nums = groups[idx]
        if len(nums) == 1:
            out.append(f"{pre}{nums[0]}{suf}")
            continue
        ranges: list[str] = []
        lo_s = hi_s = nums[0]
        for n in nums[1:]:
            nxt = f"{int(hi_s) + 1:0{len(lo_s)}d}"
            if n == nxt:
                hi_s = n
            else:
                ranges.append(_fmt_range(lo_s, hi_s))
                lo_s = hi_s = n
        ranges.append(_fmt_range(lo_s, hi_s))
        out.append(f"{pre}[{','.join(ranges)}]{suf}")
    return ",".join(out)
