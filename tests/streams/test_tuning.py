"""The worker's malloc and collector settings (streams/tuning.py), on this machine."""

from __future__ import annotations

import platform

from streams.tuning import pin_mmap_threshold, tune_gc


def test_pin_mmap_threshold_is_accepted_by_glibc() -> None:
    if platform.libc_ver()[0] != "glibc":  # musl and others: a no-op that says so
        assert pin_mmap_threshold() in (True, False)
        return
    assert pin_mmap_threshold(256 * 1024) is True


def test_tune_gc_freezes_what_exists_and_sets_the_young_threshold() -> None:
    import gc

    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    try:
        tune_gc(123_456)
        assert gc.get_threshold() == (123_456, before[1], before[2])
        assert gc.get_freeze_count() > frozen  # this test's own objects among them
        cycle: list[object] = []
        cycle.append(cycle)  # made after the freeze: still collected
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
