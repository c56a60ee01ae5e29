"""The worker's malloc setting (streams/memory.py), on this machine's C library."""

from __future__ import annotations

import platform

from streams.memory import pin_mmap_threshold


def test_pin_mmap_threshold_is_accepted_by_glibc() -> None:
    if platform.libc_ver()[0] != "glibc":  # musl and others: a no-op that says so
        assert pin_mmap_threshold() in (True, False)
        return
    assert pin_mmap_threshold(256 * 1024) is True
