"""Process memory settings for the long-lived worker.

glibc serves allocations above its mmap threshold with mmap (given back to the system when
freed) and the rest from the heap. The threshold is dynamic: each large block freed raises it
(up to 32 MiB), so a worker that keeps regrowing numpy arrays of a few MB ends up allocating
them from the heap, where freed blocks stay in the process. Pinning the threshold at 256 KiB
(setting ``worker.mmap_threshold``, KiB; 0 leaves glibc alone) keeps every large array
mmapped, so freed arrays leave the process, at some cost in records/s (both measured in the
README's benchmark table). No effect, and no error, on other C libraries.
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


# container allocations between two young-generation collections (a pause of ~70 ms)
GC_THRESHOLD0 = 200_000


def tune_gc(threshold0: int = GC_THRESHOLD0) -> None:
    """Python's cyclic garbage collector for a worker that allocates millions of short-lived
    containers (a decoded batch is a list of lists, a row a tuple) beside a large long-lived
    state: the objects made before the worker starts are frozen (never scanned again), and a
    young collection comes every ``threshold0`` allocations instead of every 700. The worker's
    objects rarely form cycles; those that do are still collected, a little later."""
    import gc

    gc.collect()
    gc.freeze()
    _, g1, g2 = gc.get_threshold()
    gc.set_threshold(threshold0, g1, g2)
