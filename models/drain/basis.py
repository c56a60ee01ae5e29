"""Drain percentages of a window and the quality of their basis (seed 000 §IV-A, §IV-B).

* Static basis (§III-B.3): ``(basis_seconds x basis_nodes) / 3600`` node-hours, the machine's
  schedulable nodes over the window's length; Blue Waters: 86,400 s x 26,846 nodes = 644,304
  node-hours per day.
* Dynamic basis: the node-seconds accounted in the window minus those in state Down (a node that
  is down cannot be drained).
* A window's basis is ``short`` when its mean accounted seconds per node fall below
  ``quality_min`` (95 %) of its length: log gaps or nodes that appeared mid-window make its
  percentages less trustworthy.
"""

from __future__ import annotations

from dataclasses import dataclass

QUALITY_MIN = 0.95


def static_basis_node_hours(nodes: int, seconds: float) -> float:
    """Seed 000 §III-B.3: ((basis_seconds) * (basis_nodes)) / 3600."""
    return seconds * nodes / 3600.0


@dataclass(frozen=True, slots=True)
class WindowBasis:
    drain_pct_static: float | None  # None: no static basis configured
    drain_pct_dynamic: float | None  # None: nothing but Down accounted
    seconds_per_node: float  # mean accounted seconds per node seen in the window
    quality: str  # "ok" | "short"


def window_basis(
    drain_ms: int,
    accounted_ms: int,
    down_ms: int,
    nodes: int,
    length_ms: int,
    basis_nodes: int,
    quality_min: float = QUALITY_MIN,
) -> WindowBasis:
    static = drain_ms / (basis_nodes * length_ms) * 100 if basis_nodes else None
    avail = accounted_ms - down_ms
    dynamic = drain_ms / avail * 100 if avail > 0 else None
    per_node = accounted_ms / 1000 / nodes if nodes else 0.0
    quality = "ok" if per_node >= quality_min * (length_ms / 1000) else "short"
    return WindowBasis(static, dynamic, per_node, quality)
