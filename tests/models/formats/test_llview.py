"""LLview series readers, and the job report of job 9438058 reproduced from its own series.

What the report's numbers are (found by reproducing them here):
* cpu.<col>_avg/_min/_max: mean / min / max over all LoadMem rows (3 nodes x 660 time stamps) of
  the unrounded values; the file prints them rounded (load, usage to 0.01; used_mem in GiB to
  0.01 while the report has MiB), so averages agree to the file's rounding;
* fs.fs_<fs>_<col>_max: the max of the FSusage_<fs> column (MbwR, MbrR, ocR) to 1e-6;
* num_datapoints: distinct time stamps per file (fs_<fs>_ndps, ld_ndps);
* fs.fs_<fs>_Mbw_sum: sum of MbwR x seconds since the previous LoadMem time stamp, x 1.048576
  (MiB -> MB), within 0.01 %. The read sums (Mbr_sum) do NOT follow this rule (3-6 % off).
"""

from __future__ import annotations

import numpy as np
import pytest

from models.formats import llview
from models.records.nodestatus import Interner
from models.records.reject import Reject
from models.samples.dfs import dfs_minutely, job_write_stats
from models.samples.utilization import job_utilization
from tests.paths import SHARED_DATA

DATA = SHARED_DATA / "llview" / "job-9438058"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"LLview data not at {DATA}")
FS = ("all", "home", "project", "scratch")


def _series(name: str) -> llview.LlviewSeries:
    return llview.parse_series((DATA / name).read_text(), name)


@pytest.fixture(scope="module")
def report() -> dict:
    r = llview.parse_job_report((DATA / "jobreport_grp261_user1749_9438058.json").read_bytes())
    assert r.jobid == "9438058" and r.nodes == ("jwb0263", "jwb0264", "jwb0265")
    return r.sections


def test_parse_series_rejects_bad_rows_and_keeps_good_ones():
    text = (
        "jobid ts nodeid MbwR MbrR ocR\n"
        "1 100 n1 1.5 0.5 3\n"
        "1 160 n1 oops 0.5 3\n"
        "1 220 n1 1.0\n"
        "1 280 n2 2.0 0.0 0\n"
    )
    rej: list[Reject] = []
    s = llview.parse_series(text, "f", rej)
    assert s.num["ts"].tolist() == [100, 280] and s.text["nodeid"] == ["n1", "n2"]
    assert [(r.reason, r.lineno) for r in rej] == [("bad_number", 3), ("wrong_field_count", 4)]
    with pytest.raises(ValueError):
        llview.parse_series("a b c\n1 2 3\n")


@pytest.mark.data
@needs_data
def test_loadmem_averages_and_extremes_are_the_reports(report):
    cpu = report["cpu"]
    lm = _series("LoadMem_9438058_node.dat")
    assert len(lm) == 1980 and np.unique(lm.num["ts"]).size == report["num_datapoints"]["ld_ndps"]
    # columns printed with 2 decimals: the mean of rounded values is within 0.005 of the true mean
    for col in (
        "load",
        "usage",
        "used_cores",
        "used_cores_phys",
        "used_cores_logic",
        "currentwatts",
        "avewatts",
    ):
        avg, mn, mx = llview.summary(lm, col)
        assert avg == pytest.approx(cpu[f"{col}_avg"], abs=0.005), col
        assert mn == pytest.approx(cpu[f"{col}_min"], abs=0.005), col
        assert mx == pytest.approx(cpu[f"{col}_max"], abs=0.005), col
    # exact where the file lost no digits
    assert llview.summary(lm, "load") == pytest.approx((4.07933333333333, 0.14, 5.01), abs=1e-12)
    # used_mem: GiB in the file, MiB in the report
    avg, mn, mx = llview.summary(lm, "used_mem")
    assert avg * 1024 == pytest.approx(cpu["used_mem_avg"], abs=0.005 * 1024)
    assert (mn * 1024, mx * 1024) == pytest.approx(
        (cpu["used_mem_min"], cpu["used_mem_max"]), abs=0.005 * 1024
    )


@pytest.mark.data
@needs_data
def test_fabric_averages_are_the_reports(report):
    fa = _series("Fabric_9438058_node.dat")
    for col in ("mbin", "mbout", "pckin", "pckout"):  # printed with 3 decimals
        avg, mn, mx = llview.summary(fa, col)
        assert avg == pytest.approx(report["fabric"][f"{col}_avg"], abs=0.0005)
        assert mx == pytest.approx(report["fabric"][f"{col}_max"], abs=0.0005)


@pytest.mark.data
@needs_data
@pytest.mark.parametrize("fs", FS)
def test_fs_maxima_and_datapoints_are_the_reports(report, fs):
    s = _series(f"FSusage_9438058_{fs}_node.dat")
    for col in ("MbwR", "MbrR", "ocR"):
        assert s.num[col].max() == pytest.approx(report["fs"][f"fs_{fs}_{col}_max"], abs=1.01e-6)
    assert np.unique(s.num["ts"]).size == report["num_datapoints"][f"fs_{fs}_ndps"]
    assert report["fs"]["fs_all_MbwR_max"] == 666.534302 == s.num["MbwR"].max() or fs != "all"


@pytest.mark.data
@needs_data
@pytest.mark.parametrize("fs", ["all", "scratch"])
def test_fs_write_sum_is_rate_times_grid_interval_in_mb(report, fs):
    lm = _series("LoadMem_9438058_node.dat")
    J, N = Interner(), Interner()
    io = llview.io_from_fsusage(_series(f"FSusage_9438058_{fs}_node.dat"), lm.num["ts"], J, N)
    mib = io.write_amount.sum()
    assert mib * 1.048576 == pytest.approx(report["fs"][f"fs_{fs}_Mbw_sum"], rel=1e-4)


@pytest.mark.data
@needs_data
def test_job_utilization_of_9438058(report):
    lm = _series("LoadMem_9438058_node.dat")
    cores = llview.cores_from_pcore(_series("PCOREusage_9438058_node.dat"))
    assert cores == {"jwb0263": 48, "jwb0264": 48, "jwb0265": 48}
    J, N = Interner(), Interner()
    m = llview.measures_from_loadmem(lm, 48, J, N, "booster")
    # JUWELS Booster node: 512 GB and 48 cores (the report's used_mem_max is 307.9 GiB per node)
    u = job_utilization(m, mem_per_core_kb=512 / 48 * llview.GIB_KB)
    assert (u.nodes[0], u.cores[0], u.measures[0]) == (3, 144, 660)
    # core use = usage % of the node's cores: the report's usage_avg / 100
    assert u.core_util_mean[0] == pytest.approx(report["cpu"]["usage_avg"] / 100, abs=5e-5)
    assert u.mem_mean_ratio[0] == pytest.approx(
        report["cpu"]["used_mem_avg"] / 1024 / 512, abs=1e-4
    )
    assert u.mem_max_core_ratio[0] == pytest.approx(
        report["cpu"]["used_mem_max"] / 1024 / 512, abs=1e-4
    )
    # run time from the series: first to last time stamp + one median interval, vs the
    # report's wall time (11.32 h): within one sampling interval
    assert abs(u.run_seconds[0] - report["rc"]["rc_wallh"] * 3600) < 120
    io = llview.io_from_fsusage(_series("FSusage_9438058_all_node.dat"), lm.num["ts"], J, N)
    mx, _ = job_write_stats(io)
    assert mx[0] == report["fs"]["fs_all_MbwR_max"]
    dm = dfs_minutely(io, np.unique(np.floor(lm.num["ts"] / 60)).astype(np.int64))
    assert dm.write.max() >= report["fs"]["fs_all_MbwR_max"]
