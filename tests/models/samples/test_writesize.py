"""Write sizes per job (seed 003 §5.2, Fig. 15): hand-made counters, resets, no writes."""

from __future__ import annotations

import math

import numpy as np

from models.records.nodesample import NodeSample
from models.samples.writesize import BUCKETS, EDGES, bucket_of, write_sizes

KiB, MiB = 1024, 1024 * 1024


def s(ts, syscw, wb, job="1", pid=1, node="n1", start=0.0, wchar=None):
    return NodeSample(
        ts=ts,
        job=job,
        pid=pid,
        node=node,
        command="x",
        vm_peak_kb=0,
        vm_size_kb=0,
        vm_rss_kb=0,
        vm_swap_kb=0,
        syscr=0,
        syscw=syscw,
        read_bytes=0,
        write_bytes=wb,
        core=0.0,
        receive=0,
        transmit=0,
        start=start,
        wchar=wchar,
    )


def test_bucket_edges_are_powers_of_two_and_half_open() -> None:
    assert EDGES == (4 * KiB, 64 * KiB, MiB)
    sizes = np.array([0, 4 * KiB - 1, 4 * KiB, 64 * KiB - 1, 64 * KiB, MiB - 1, MiB, 1e12])
    assert bucket_of(sizes).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert len(BUCKETS) == 4


def test_known_counters_one_process() -> None:
    # intervals: 10 calls of 1 KiB, 4 calls of 64 KiB, 2 calls of 2 MiB (order shuffled)
    samples = [
        s(180, 16, 10 * KiB + 256 * KiB + 4 * MiB),
        s(0, 0, 0),
        s(120, 14, 10 * KiB + 256 * KiB),
        s(60, 10, 10 * KiB),
    ]
    ws = write_sizes(samples)
    assert ws.jobs == ["1"]
    assert ws.intervals.tolist() == [3]
    assert ws.calls.tolist() == [16]
    assert ws.bytes.tolist() == [10 * KiB + 256 * KiB + 4 * MiB]
    assert ws.bucket_calls.tolist() == [[10, 0, 4, 2]]
    assert ws.bucket_bytes.tolist() == [[10 * KiB, 0, 256 * KiB, 4 * MiB]]
    assert ws.bytes_per_call()[0] == (10 * KiB + 256 * KiB + 4 * MiB) / 16


def test_processes_and_jobs_are_separate_series() -> None:
    samples = [
        s(0, 100, 100 * KiB, job="a", pid=1),
        s(60, 110, 110 * KiB, job="a", pid=1),  # 10 calls x 1 KiB
        s(0, 5, 0, job="a", pid=2, node="n2"),
        s(60, 6, 8 * KiB, job="a", pid=2, node="n2"),  # 1 call x 8 KiB
        s(30, 0, 0, job="b", pid=1),  # same pid, other job: not an interval of job a's pid 1
        s(90, 2, 2 * MiB, job="b", pid=1),  # 2 calls x 1 MiB
    ]
    ws = write_sizes(samples)
    assert ws.jobs == ["a", "b"]
    assert ws.intervals.tolist() == [2, 1]
    assert ws.bucket_calls.tolist() == [[10, 1, 0, 0], [0, 0, 0, 2]]
    assert ws.bucket_bytes.tolist() == [[10 * KiB, 8 * KiB, 0, 0], [0, 0, 0, 2 * MiB]]


def test_counter_reset_and_pid_reuse_are_ignored() -> None:
    samples = [
        s(0, 50, 50 * MiB),
        s(60, 60, 60 * MiB),  # 10 calls x 1 MiB
        s(120, 3, 3 * KiB),  # reset: ignored, no negative size
        s(180, 5, 5 * KiB + 2 * KiB),  # 2 calls x 2 KiB
        s(240, 6, 1 * KiB),  # write_bytes decreased alone: ignored too
        s(300, 10, 999 * MiB, start=1000.0),  # pid reused (new start): a new series
        s(360, 12, 999 * MiB + 128 * KiB, start=1000.0),  # 2 calls x 64 KiB
    ]
    ws = write_sizes(samples)
    assert ws.ignored_resets == 2
    assert ws.intervals.tolist() == [3]
    assert ws.bucket_calls.tolist() == [[2, 0, 2, 10]]
    assert ws.bucket_bytes.tolist() == [[4 * KiB, 0, 128 * KiB, 10 * MiB]]


def test_intervals_without_write_calls_are_ignored() -> None:
    samples = [
        s(0, 7, 0),
        s(60, 7, 0),  # nothing
        s(120, 7, 4 * KiB),  # bytes (writeback, mmap) but no call: not a write size
        s(180, 8, 4 * KiB + 100),  # 1 call x 100 B
    ]
    ws = write_sizes(samples)
    assert ws.ignored_no_writes == 2
    assert ws.intervals.tolist() == [1]
    assert ws.bucket_calls.tolist() == [[1, 0, 0, 0]]
    assert ws.bytes_per_call().tolist() == [100.0]


def test_no_intervals_no_writes() -> None:
    ws = write_sizes([s(0, 0, 0, job="x"), s(60, 0, 0, job="x"), s(0, 1, 1, job="y")])
    assert ws.jobs == ["x", "y"]
    assert ws.intervals.tolist() == [0, 0]
    assert all(math.isnan(v) for v in ws.bytes_per_call())
    assert write_sizes([]).jobs == []


def test_wchar_is_the_numerator_when_both_samples_have_it() -> None:
    # 10 calls of 512 B to a pipe: wchar sees them, write_bytes (storage) does not
    samples = [
        s(0, 0, 0, wchar=0),
        s(60, 10, 0, wchar=5 * KiB),
        s(120, 12, 8 * MiB, wchar=5 * KiB + 2 * MiB),
    ]
    ws = write_sizes(samples)
    assert ws.intervals.tolist() == [2] and ws.wchar_intervals.tolist() == [2]
    assert ws.calls.tolist() == [12]
    assert ws.bytes.tolist() == [5 * KiB + 2 * MiB]
    assert ws.bucket_calls.tolist() == [[10, 0, 0, 2]]
    assert ws.bucket_bytes.tolist() == [[5 * KiB, 0, 0, 2 * MiB]]
    assert ws.measure() == ["wchar"]


def test_falls_back_to_write_bytes_when_an_end_lacks_wchar() -> None:
    samples = [
        s(0, 0, 0),  # old sampler: no wchar
        s(60, 4, 4 * KiB, wchar=999 * MiB),  # write_bytes: 4 calls x 1 KiB
        s(120, 6, 4 * KiB, wchar=999 * MiB + 128 * KiB),  # wchar: 2 calls x 64 KiB
        s(0, 0, 0, job="old"),
        s(60, 1, 2 * MiB, job="old"),  # no wchar at all: write_bytes
        s(0, 0, 0, job="none"),
    ]
    ws = write_sizes(samples)
    assert ws.jobs == ["1", "old", "none"]
    assert ws.intervals.tolist() == [2, 1, 0]
    assert ws.wchar_intervals.tolist() == [1, 0, 0]
    assert ws.bucket_calls.tolist() == [[4, 0, 2, 0], [0, 0, 0, 1], [0, 0, 0, 0]]
    assert ws.bucket_bytes.tolist() == [[4 * KiB, 0, 128 * KiB, 0], [0, 0, 0, 2 * MiB], [0] * 4]
    assert ws.measure() == ["mixed", "write_bytes", "write_bytes"]


def test_wchar_reset_is_ignored_and_write_bytes_does_not_matter_then() -> None:
    samples = [
        s(0, 10, 10 * MiB, wchar=10 * MiB),
        s(60, 12, 5 * MiB, wchar=10 * MiB + 2 * KiB),  # write_bytes fell, wchar is used: counted
        s(120, 13, 6 * MiB, wchar=KiB),  # wchar fell: a reset, ignored
        s(180, 13, 6 * MiB, wchar=KiB),  # no call
    ]
    ws = write_sizes(samples)
    assert (ws.ignored_resets, ws.ignored_no_writes) == (1, 1)
    assert ws.intervals.tolist() == [1] and ws.bytes.tolist() == [2 * KiB]
    assert ws.bytes_per_call().tolist() == [KiB]
    assert ws.measure() == ["wchar"]
