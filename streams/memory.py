"""Process memory settings for the long-lived worker.

glibc serves allocations above its mmap threshold with mmap (given back to the system when
freed) and the rest from the heap. The threshold is dynamic: each large block freed raises it
(up to 32 MiB), so a worker that keeps regrowing numpy arrays of a few MB ends up allocating
them from the heap, where freed blocks stay in the process. Pinning the threshold at 256 KiB
(setting ``worker.mmap_threshold``, KiB; 0 leaves glibc alone) keeps every large array
mmapped: peak RSS 622 -> 486 MB in ``bench/bench_live_memory.py``, for about a quarter fewer
records/s in ``bench/bench_live.py``. No effect, and no error, on other C libraries.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc malloc.h
MMAP_THRESHOLD = 256 * 1024
TRIM_THRESHOLD = 64 * 1024 * 1024


def pin_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold (disables its dynamic growth); True when it was set."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # pinning one threshold stops glibc adjusting the other: a heap trimmed at its 128 KiB
    # default would be given back and faulted in again on every batch (a third of the rate)
    return bool(mallopt(M_MMAP_THRESHOLD, threshold)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
