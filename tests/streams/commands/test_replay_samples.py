"""`drainwatch replay --format samples|llview`: the three CSVs with the issue's exact columns."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import orjson
import pytest

from models.formats.sampletrace import dumps
from models.records.nodesample import NodeSample
from streams.cli import main
from tests.paths import SHARED_DATA

DATA = SHARED_DATA / "llview" / "job-9438058"
MB = 10**6
GIB_KB = 1024 * 1024


def _s(ts, job, pid, node, wb, core=100.0, rss=GIB_KB, cores=2, start=-1.0):
    return NodeSample(
        ts=ts,
        job=job,
        pid=pid,
        node=node,
        command="app",
        vm_peak_kb=rss,
        vm_size_kb=rss,
        vm_rss_kb=rss,
        vm_swap_kb=0,
        syscr=0,
        syscw=0,
        read_bytes=0,
        write_bytes=wb,
        core=core,
        receive=0,
        transmit=0,
        start=start,
        cores=cores,
        job_class="normal",
    )


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _trace(tmp_path: Path) -> Path:
    """Job A: 2 nodes x 2 cores, one process per node at 100 % (util 0.5), 1 GiB each; writes
    on n1 0, 3000, 9000, 15000, 15000 MB cumulative -> 50, 100, 100, 0 MB/s in minutes 1-4.
    Job B: 1 node, 1 core, 25 %, writes 30 MB/s in minutes 1-4. Plus one bad line."""
    t0 = 1_700_000_040  # a minute boundary
    lines = []
    cum_a = [0, 3000, 9000, 15000, 15000]
    for i in range(5):
        ts = t0 + 60 * i + 1
        lines.append(dumps(_s(ts, "A", 10, "n1", cum_a[i] * MB)))
        lines.append(dumps(_s(ts, "A", 11, "n2", 0)))
        lines.append(dumps(_s(ts, "B", 20, "n3", 1800 * MB * i, core=25.0, cores=1)))
    lines.insert(3, b'{"ts": 1, "job": "A"}')
    p = tmp_path / "trace.jsonl.gz"
    p.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    return p


def test_replay_samples_csvs(tmp_path):
    out = tmp_path / "out"
    rej = tmp_path / "rejects.tsv"
    rc = main(
        [
            "replay",
            "--format",
            "samples",
            str(_trace(tmp_path)),
            "--out",
            str(out),
            "--mem-per-core",
            "1",
            "--hot-zone-bw",
            "98,5",
            "--rejects",
            str(rej),
            "--no-progress",
        ]
    )
    assert rc == 0
    jobs = _rows(out / "job_utilization.csv")
    assert list(jobs[0]) == [
        "job",
        "nodes",
        "cores",
        "measures",
        "core_util_mean",
        "mem_mean_ratio",
        "mem_max_core_ratio",
        "swap_kb_max",
        "sa_core_seconds",
        "write_max_node_mb_s",
        "write_total_mb",
    ]
    a, b = jobs
    assert (a["job"], a["nodes"], a["cores"], a["measures"]) == ("A", "2", "4", "5")
    assert float(a["core_util_mean"]) == pytest.approx(0.5)
    assert float(a["mem_mean_ratio"]) == pytest.approx(0.5)  # 2 GiB of 4 x 1 GiB
    assert float(a["mem_max_core_ratio"]) == pytest.approx(0.5)
    assert float(a["sa_core_seconds"]) == pytest.approx(4 * (240 + 60))
    assert float(a["write_max_node_mb_s"]) == pytest.approx(100.0)
    assert float(a["write_total_mb"]) == pytest.approx(15000.0)
    assert float(b["core_util_mean"]) == pytest.approx(0.25)
    assert float(b["write_total_mb"]) == pytest.approx(7200.0)

    dfs = _rows(out / "dfs_minutely.csv")
    assert list(dfs[0]) == ["minute", "write_mb_s", "read_mb_s", "jobs_writing"]
    assert [float(r["write_mb_s"]) for r in dfs] == pytest.approx([0, 80, 130, 130, 30])
    assert [int(r["jobs_writing"]) for r in dfs] == [0, 2, 2, 2, 1]
    assert dfs[0]["minute"] == "2023-11-14T22:14:00.000Z"

    hz = _rows(out / "hot_zones.csv")
    assert list(hz[0]) == ["start", "end", "peak_mb_s", "minutes", "top_jobs"]
    assert len(hz) == 1
    (z,) = hz
    assert (z["start"], z["end"], z["minutes"]) == (
        "2023-11-14T22:16:00.000Z",
        "2023-11-14T22:18:00.000Z",
        "2",
    )
    assert float(z["peak_mb_s"]) == pytest.approx(130)
    assert z["top_jobs"] == f"A:{200 / 260:.4f};B:{60 / 260:.4f}"

    summary = orjson.loads((out / "summary_samples.json").read_bytes())
    assert (
        summary["samples"]["hot_zone_threshold"] == 93.0 and summary["samples"]["io_unit"] == "MB"
    )
    assert summary["rejected_by_reason"] == {"missing_field": 1}
    assert rej.read_text().count("\n") == 1
    assert summary["samples"]["classes"]["normal"]["jobs"] == 2


@pytest.mark.data
@pytest.mark.skipif(not DATA.is_dir(), reason=f"LLview data not at {DATA}")
def test_replay_llview_job_9438058(tmp_path):
    out = tmp_path / "out"
    rc = main(
        [
            "replay",
            "--format",
            "llview",
            str(DATA),
            "--out",
            str(out),
            "--mem-per-core",
            str(512 / 48),
        ]
    )
    assert rc == 0
    report = orjson.loads((DATA / "jobreport_grp261_user1749_9438058.json").read_bytes())
    (j,) = _rows(out / "job_utilization.csv")
    assert (j["job"], j["nodes"], j["cores"], j["measures"]) == ("9438058", "3", "144", "660")
    assert float(j["core_util_mean"]) == pytest.approx(report["cpu"]["usage_avg"] / 100, abs=5e-5)
    assert float(j["write_max_node_mb_s"]) == report["fs"]["fs_all_MbwR_max"]
    # MiB here; the report's sum is in MB
    assert float(j["write_total_mb"]) * 1.048576 == pytest.approx(
        report["fs"]["fs_all_Mbw_sum"], rel=1e-4
    )
    assert j["swap_kb_max"] == ""  # LLview has no swap series
    dfs = _rows(out / "dfs_minutely.csv")
    assert len(dfs) > 600
    assert max(float(r["write_mb_s"]) for r in dfs) >= 666.534302
    hz = _rows(out / "hot_zones.csv")
    assert hz and all(r["top_jobs"] == "9438058:1.0000" for r in hz)
    assert all(float(r["peak_mb_s"]) > 93 for r in hz)


@pytest.mark.data
@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data/llview absent")
def test_replay_llview_per_file_system_and_job_series(tmp_path):
    out = tmp_path / "out"
    assert (
        main(
            [
                "replay",
                "--format",
                "llview",
                str(DATA),
                "--out",
                str(out),
                "--hot-zone-fs",
                "scratch=50",
            ]
        )
        == 0
    )
    per_fs = _rows(out / "dfs_minutely_fs.csv")
    assert {r["fs"] for r in per_fs} == {"fastdata", "home", "project", "scratch"}
    total = {r["minute"]: float(r["write_mb_s"]) for r in _rows(out / "dfs_minutely.csv")}
    by_minute: dict[str, float] = {}
    for r in per_fs:
        by_minute[r["minute"]] = by_minute.get(r["minute"], 0.0) + float(r["write_mb_s"])
    # the file systems add up to LLview's own "all" series (its 6-decimal rounding aside)
    assert by_minute.keys() == total.keys()
    assert max(abs(by_minute[m] - total[m]) for m in total) < 0.02
    # one job: its write series is the whole DFS load, minute by minute
    series = {r["minute"]: float(r["write_mb_s"]) for r in _rows(out / "job_write_series.csv")}
    assert set(series) <= set(total)
    assert {m: series.get(m, 0.0) for m in total} == pytest.approx(total, abs=1e-9)
    zones = _rows(out / "hot_zones_fs.csv")
    assert zones and {z["fs"] for z in zones} == {"scratch"}
    assert all(float(z["peak_mb_s"]) > 50 for z in zones)
    summary = orjson.loads((out / "summary_samples.json").read_bytes())
    assert summary["samples"]["file_systems"]["scratch"]["threshold"] == 50.0
    # the others get the default, 93 MB/s, converted exactly to LLview's MiB/s (not 93 MiB/s)
    home = summary["samples"]["file_systems"]["home"]
    assert home["threshold"] == 93e6 / 2**20 and home["unit"] == "MiB/s"
    assert home["given"] == "93 MB/s" and home["origin"].startswith("seed 003 example")
    assert summary["samples"]["file_systems"]["scratch"]["given"] == "50 MiB/s"


def _hot(tmp_path, *opts):
    out = tmp_path / "out"
    argv = ["replay", "--format", "samples", str(_trace(tmp_path)), "--out", str(out)]
    rc = main([*argv, "--no-progress", *opts])
    return rc, out


@pytest.mark.parametrize(
    ("opts", "zones", "threshold", "given"),
    [
        # the trace's minutes: 0, 80, 130, 130, 30 MB/s
        (["--hot-zone", "124MiB/s"], 0, 124 * 2**20 / MB, "124 MiB/s"),  # 130.02 MB/s
        (["--hot-zone", "123MiB/s"], 1, 123 * 2**20 / MB, "123 MiB/s"),  # 128.97 MB/s
        (["--hot-zone", "124"], 1, 124.0, "124 MB/s"),  # plain: the source's MB/s
        (["--hot-zone", "0.124GB/s"], 1, 124.0, "0.124 GB/s"),
        (["--hot-zone-bw", "134.5MB/s,5"], 1, 129.5, "129.5 MB/s"),
        ([], 1, 93.0, "93 MB/s"),
    ],
)
def test_hot_zone_threshold_keeps_its_unit(tmp_path, opts, zones, threshold, given):
    rc, out = _hot(tmp_path, *opts)
    assert rc == 0
    s = orjson.loads((out / "summary_samples.json").read_bytes())["samples"]
    assert s["hot_zone_threshold"] == pytest.approx(threshold, abs=1e-6)
    assert (s["hot_zone_unit"], s["hot_zone_given"]) == ("MB/s", given)
    assert s["hot_zone_episodes"] == zones == len(_rows(out / "hot_zones.csv"))


def test_hot_zone_default_says_it_is_the_seeds_example_and_unused_fs_listed(tmp_path):
    rc, out = _hot(tmp_path, "--hot-zone-fs", "scratch=1GiB/s")
    assert rc == 0
    s = orjson.loads((out / "summary_samples.json").read_bytes())["samples"]
    assert s["hot_zone_origin"].startswith("seed 003 example")
    assert s["hot_zone_fs_unused"] == ["scratch"]  # this trace has no per-file-system series


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (["--hot-zone-bw", "98MB/s,5MiB/s"], "MEAN in MB/s, STD in MiB/s: give both in one unit"),
        (["--hot-zone", "93", "--hot-zone-bw", "98,5"], "give one"),
        (["--hot-zone", "93M/s"], "unit 'M/s' is not one of"),
        (["--hot-zone", "800Mb/s"], "bits per second"),
        (["--hot-zone", "0MB/s"], "finite number > 0"),
        (["--hot-zone-fs", "s=1GB/s", "--hot-zone-fs", "s=2GB/s"], "s has a threshold already"),
        (["--hot-zone-fs", "=1GB/s"], "expected FS=RATE"),
    ],
)
def test_hot_zone_units_refused_not_guessed(tmp_path, capsys, opts, message):
    rc, out = _hot(tmp_path, *opts)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1, err
    assert not out.exists()
