"""The physical range of every numeric field of the job formats (the table is in
:mod:`models.records.plausible`, beside the time bounds, and in docs/inputs.md). Plain Python:
the record parsers import it without numpy."""

from __future__ import annotations

MAX_DURATION_S = 3650 * 86_400  # ten years of 365 days
MAX_COUNT = 2**31 - 1
MAX_MEMORY_KIB = 1 << 42  # 4 PiB
MAX_EXIT = 255
EXIT_CODE_MIN, EXIT_CODE_MAX = -(2**31), 2**31 - 1
MAX_UID = 2**32 - 1
MAX_ID = 2**63 - 1  # numeric ids: int64


def duration_ok(v: float) -> bool:
    """A duration, wall time or time limit in seconds: 0 .. :data:`MAX_DURATION_S` (never NaN)."""
    return 0 <= v <= MAX_DURATION_S


def count_ok(v: int) -> bool:
    """A node, core, CPU or processor count: 0 .. :data:`MAX_COUNT`."""
    return 0 <= v <= MAX_COUNT
