"""The report's numbers are the replay tables' numbers: each section's table read back against
the CSV it came from (node-seconds shown as node-hours), on the demo's outputs; sections whose
inputs are absent are listed, not shown; the page needs no network."""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from pathlib import Path

import pytest

from streams.cli import main as cli
from streams.report import build_report, data, sections
from streams.report.page import cell

DIRS = ("drain", "jobs", "samples", "whatif")


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _built(demo_out: Path) -> dict[str, sections.Section]:
    o = data.load([str(demo_out / d) for d in DIRS])
    return {s.key: s for s in sections.build(o) if isinstance(s, sections.Section)}


@pytest.fixture(scope="module")
def built(demo_out: Path) -> dict[str, sections.Section]:
    return _built(demo_out)


def test_every_section_is_built_from_the_three_replays(built: dict[str, sections.Section]) -> None:
    assert list(built) == [key for key, *_ in sections.SECTIONS]
    for s in built.values():
        assert s.caption and "seed 00" in s.caption, s.key
        assert s.figures or s.tables, s.key


def test_drain_per_day_equals_drain_daily_csv(demo_out: Path, built: dict) -> None:
    csv_rows = _rows(demo_out / "drain" / "drain_daily.csv")
    shown = built["drain"].tables[0].rows
    assert [r[0] for r in shown] == [r["day"] for r in csv_rows]
    for r, c in zip(shown, csv_rows, strict=True):
        assert r[1] == pytest.approx(float(c["drain_node_seconds"]) / 3600, rel=1e-12)
        assert r[2] == float(c["drain_pct_static"])
        assert r[3] == float(c["drain_pct_dynamic"])
        assert r[5] == c["data_quality"]
    total_h = sum(float(c["drain_node_seconds"]) for c in csv_rows) / 3600
    assert f"{total_h:,.1f} node-hours drained" in built["drain"].facts[0]


def test_node_states_sum_node_states_csv(demo_out: Path, built: dict) -> None:
    want: dict[str, float] = defaultdict(float)
    for c in _rows(demo_out / "drain" / "node_states.csv"):
        want[sections.state_category(c["state"], c["has_rsv"] == "1")] += float(c["seconds"])
    shown = {r[0]: r[1] for r in built["node-states"].tables[0].rows}
    assert shown.keys() == want.keys()
    for k, v in want.items():
        assert shown[k] == pytest.approx(v / 3600, rel=1e-12)
    # largest first, and Drain equals the days' drain
    hours = [r[1] for r in built["node-states"].tables[0].rows]
    assert hours == sorted(hours, reverse=True)
    daily = sum(
        float(c["drain_node_seconds"]) for c in _rows(demo_out / "drain" / "drain_daily.csv")
    )
    assert shown["Drain"] == pytest.approx(daily / 3600, rel=1e-9)


def test_top_drain_jobs_sliding_and_ftl_equal_their_csv(demo_out: Path, built: dict) -> None:
    jobs = _rows(demo_out / "drain" / "drain_jobs.csv")
    shown = built["drain-jobs"].tables[0].rows
    assert [r[1] for r in shown] == [c["job"] for c in jobs[: sections.TOP]]
    for r, c in zip(shown, jobs, strict=False):
        assert r[2] == pytest.approx(float(c["drain_node_seconds"]) / 3600, rel=1e-12)
        assert r[3] == int(c["nodes_charged"]) and r[4] == int(c["size"])
    sliding = _rows(demo_out / "drain" / "sliding_jobs.csv")
    assert [r[1] for r in built["sliding"].tables[0].rows] == [c["job"] for c in sliding]
    assert built["sliding"].tables[0].rows[0][2] == pytest.approx(
        float(sliding[0]["drain_node_seconds"]) / 3600
    )
    ftl = _rows(demo_out / "drain" / "failure_to_launch.csv")
    assert [r[0] for r in built["ftl"].tables[0].rows] == [c["job"] for c in ftl]
    assert [r[3] for r in built["ftl"].tables[0].rows] == [float(c["runtime"]) for c in ftl]
    assert built["ftl"].headline["failures to launch"] == str(len(ftl))


def test_size_groups_and_drain_runtime(demo_out: Path, built: dict) -> None:
    groups = _rows(demo_out / "drain" / "size_groups.csv")
    shown = {r[0]: r for r in built["size-groups"].tables[0].rows}
    for c in groups:
        assert shown[c["group"]][2] == int(c["jobs"])
        assert shown[c["group"]][3] == pytest.approx(float(c["drain_node_seconds"]) / 3600)
    ratios = [r[1] for r in built["drain-runtime"].tables[0].rows]
    want = sorted(
        (
            float(c["drain_runtime_ratio"])
            for c in _rows(demo_out / "drain" / "drain_jobs.csv")
            if c["drain_runtime_ratio"]
        ),
        reverse=True,
    )
    assert ratios == want[:10]


def test_backfill_and_backlog(demo_out: Path, built: dict) -> None:
    days = _rows(demo_out / "drain" / "backfill_daily.csv")
    shown = built["backfill"].tables[0].rows
    assert [(r[0], r[3]) for r in shown] == [
        (c["day"], float(c["backfill_efficiency"])) for c in days
    ]
    for r, c in zip(shown, days, strict=True):
        assert r[1] == pytest.approx(float(c["backfill_node_seconds"]) / 3600)
    hours: dict[str, int] = defaultdict(int)
    for c in _rows(demo_out / "drain" / "backlog_hourly.csv"):
        hours[c["verdict"]] += 1
    assert {r[1]: r[2] for r in built["backfill"].tables[1].rows} == hours


def test_short_jobs_peak_penalty_per_holder(demo_out: Path, built: dict) -> None:
    peak: dict[tuple[str, str], float] = {}
    n: dict[tuple[str, str], int] = defaultdict(int)
    for c in _rows(demo_out / "jobs" / "shortjobs.csv"):
        k = (c["holder_kind"], c["holder"])
        peak[k] = max(peak.get(k, 0.0), float(c["adjust"]))
        n[k] += int(c["n_short"])
    shown = built["short-jobs"].tables[0].rows
    for r in shown:
        assert r[4] == peak[(r[0], r[1])] and r[2] == n[(r[0], r[1])]
    assert [r[4] for r in shown] == sorted(peak.values(), reverse=True)[: len(shown)]


def test_overruns_capability_fairshare(demo_out: Path, built: dict) -> None:
    preds = _rows(demo_out / "jobs" / "runtime_predictions.csv")
    over = [c for c in preds if c["overran"] == "1"]
    shown = built["runtime"].tables[0].rows
    assert sorted(r[0] for r in shown) == sorted(c["job"] for c in over)
    for r in shown:
        c = next(c for c in over if c["job"] == r[0])
        assert r[6] == pytest.approx(float(c["actual_s"]) / 60)
        assert r[7] == pytest.approx((float(c["actual_s"]) - float(c["upper_s"])) / 60)
    cap = _rows(demo_out / "jobs" / "capability_daily.csv")
    assert [(r[0], r[4]) for r in built["capability"].tables[0].rows] == [
        (c["day"], float(c["cup40"])) for c in cap
    ]
    fs = _rows(demo_out / "jobs" / "fairshare_usage.csv")
    last = max(c["ts"] for c in fs)
    usage = sorted((float(c["usage_node_hours"]) for c in fs if c["ts"] == last), reverse=True)
    assert [r[2] for r in built["fairshare"].tables[0].rows] == usage[: sections.TOP]


def test_dfs_and_utilisation(demo_out: Path, built: dict) -> None:
    zones = _rows(demo_out / "samples" / "hot_zones.csv")
    shown = built["dfs"].tables[0].rows
    assert sorted((r[0], r[3]) for r in shown) == sorted(
        (c["start"], float(c["peak_mb_s"])) for c in zones
    )
    assert built["dfs"].headline["hot-zone episodes"] == str(len(zones))
    util = {c["job"]: c for c in _rows(demo_out / "samples" / "job_utilization.csv")}
    for r in built["utilisation"].tables[0].rows:
        c = util[r[0]]
        assert r[3] == float(c["core_util_mean"])
        assert r[5] == pytest.approx(float(c["sa_core_seconds"]) / 3600)
    wasted = [r[6] for r in built["utilisation"].tables[0].rows]
    assert wasted == sorted(wasted, reverse=True)


def test_demo_shows_every_kind_of_finding(demo_out: Path) -> None:
    """The simulated workload is tuned so each finding occurs at least once."""
    assert _rows(demo_out / "drain" / "sliding_jobs.csv")
    assert _rows(demo_out / "drain" / "failure_to_launch.csv")
    assert any(c["overran"] == "1" for c in _rows(demo_out / "jobs" / "runtime_predictions.csv"))
    flood = [c for c in _rows(demo_out / "jobs" / "shortjobs.csv") if c["holder"] == "user095"]
    assert sum(int(c["n_short"]) for c in flood) >= 100
    assert max(float(c["adjust"]) for c in flood) > sections.FLOOD_LEVEL
    assert _rows(demo_out / "samples" / "hot_zones.csv")
    page = (demo_out / "report.html").read_text()
    assert "Simulated data" in page


def test_page_is_self_contained(demo_out: Path) -> None:
    page = (demo_out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "<link" not in page and "<img" not in page
    # the only URLs are XML namespaces and the SVG metadata's vocabulary, never fetched
    urls = set(re.findall(r'(?:src|href)="([^"#][^"]*)"', page))
    assert urls <= {"http://www.w3.org/1999/xlink"}, urls
    assert "url(http" not in page and "@import" not in page


def test_absent_inputs_are_listed_not_shown(demo_out: Path) -> None:
    r = build_report([str(demo_out / "jobs")])
    assert r.shown == ["short-jobs", "runtime", "capability", "fairshare"]
    assert set(r.missing) == {
        "drain",
        "node-states",
        "drain-jobs",
        "sliding",
        "ftl",
        "size-groups",
        "drain-runtime",
        "backfill",
        "dfs",
        "utilisation",
        "whatif",
    }
    assert 'id="not-shown"' in r.html and 'data-section="drain"' not in r.html
    assert "needs replay --format moab --jobs FILE" in r.html


def test_cell_format() -> None:
    assert cell(None) == ("–", True)
    assert cell(1234567) == ("1,234,567", True)
    assert cell(1113.49) == ("1,113", True)
    assert cell(64.0) == ("64", True)
    assert cell(9.4512) == ("9.45", True)
    assert cell(0.00222) == ("0.00222", True)
    assert cell("ok") == ("ok", False)


def test_report_command_and_replay_report(
    demo_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    dirs = [str(demo_out / d) for d in DIRS]
    assert cli(["report", *dirs, "--out", str(out), "--note", "a note"]) == 0
    page = out.read_text()
    assert "a note" in page and out.stat().st_mode & 0o044  # readable by others (umask 022)
    for key, *_ in sections.SECTIONS:
        assert f'data-section="{key}"' in page
    # replay --report: the report of the directory, beside the CSVs
    rep = tmp_path / "jobs"
    assert (
        cli(
            [
                "replay",
                "--format",
                "jobevents",
                str(demo_out / "sim" / "jobs.jsonl"),
                "--out",
                str(rep),
                "--no-progress",
                "--report",
            ]
        )
        == 0
    )
    assert 'data-section="runtime"' in (rep / "report.html").read_text()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nowhere"], "no such directory: nowhere"),
        (["{tmp}/empty"], "holds no replay output"),
        (["{demo}/jobs", "{demo}/jobs"], "both hold summary_jobs.json"),
        (["{demo}/jobs", "--out", "{tmp}/r.txt"], "give it a .html name"),
        (["{demo}/jobs", "--out", "{tmp}/d.html"], "--out {tmp}/d.html is a directory"),
        (["{demo}/sim"], "holds no replay output"),
    ],
)
def test_user_errors_are_one_line(
    demo_out: Path, tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "d.html").mkdir()
    args = [a.format(tmp=tmp_path, demo=demo_out) for a in argv]
    assert cli(["report", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("drainwatch report: ") and message.format(tmp=tmp_path) in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not [p for p in tmp_path.rglob("*.html") if p.is_file()]


def test_out_in_a_new_directory(demo_out: Path, tmp_path: Path) -> None:
    out = tmp_path / "new" / "dir" / "r.html"
    assert cli(["report", str(demo_out / "samples"), "--out", str(out)]) == 0
    assert 'data-section="dfs"' in out.read_text()


def test_a_broken_table_is_a_user_error(
    demo_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    d = tmp_path / "drain"
    shutil.copytree(demo_out / "drain", d)
    (d / "drain_daily.csv").write_text("day,accounted_node_seconds\n2015-01-01,x\n")
    assert cli(["report", str(d), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("drainwatch report: a replay table is not readable"), err
    assert not (tmp_path / "r.html").exists()


def test_long_periods_show_the_days_that_matter() -> None:
    rows = [[f"day{i:03d}", float(i % 7)] for i in range(40)]
    shown, title, more = sections.by_day_or_worst(rows, lambda r: -r[1], "the most drain")
    assert len(shown) == sections.TOP and more == 40 - sections.TOP
    assert [r[1] for r in shown] == [6.0] * 5 + [5.0] * 5 + [4.0] * 5
    assert shown[0][0] == "day006" and "of 40" in title
    assert sections.by_day_or_worst(rows[:31], lambda r: r[1], "x") == (rows[:31], "per day", 0)


@pytest.mark.data
def test_report_of_a_real_trace(tmp_path: Path) -> None:
    """KTH SP2 (Parallel Workloads Archive): a year of days, 28,476 jobs."""
    from tests.paths import SHARED_DATA

    trace = SHARED_DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
    if not trace.exists():
        pytest.skip(f"{trace} is absent (../shared/data)")
    out = tmp_path / "kth"
    assert (
        cli(
            [
                "replay",
                "--format",
                "swf",
                str(trace),
                "--out",
                str(out),
                "--no-progress",
                "--report",
            ]
        )
        == 0
    )
    r = build_report([str(out)])
    assert r.shown == ["short-jobs", "runtime", "capability", "fairshare"]
    cap = _rows(out / "capability_daily.csv")
    lowest = sorted(cap, key=lambda c: (float(c["cup40"]), c["day"]))[: sections.TOP]
    page = (out / "report.html").read_text()
    assert f"the {sections.TOP} days with the lowest CUP40, of {len(cap)}" in page
    assert all(f"<td>{c['day']}</td>" in page for c in lowest)
    over = sum(c["overran"] == "1" for c in _rows(out / "runtime_predictions.csv"))
    assert r.headline["overruns"] == f"{over:,}"
    assert len(page) < 3_000_000  # thinned plots: a page, not a dump of 28,476 points


def test_text_from_the_data_is_escaped() -> None:
    import numpy as np

    from streams.report import plots
    from streams.report.page import _table

    svg = plots.bars(["<script>alert(1)</script>"], np.array([1.0]), "node-hours")
    assert "<script" not in svg and "&lt;script&gt;" in svg
    table = _table(sections.TableView(["job <id>"], [["<b>1</b>"]]))
    assert "<b>" not in table and "&lt;b&gt;1&lt;/b&gt;" in table and "job &lt;id&gt;" in table


def test_long_lines_are_thinned_keeping_their_peaks() -> None:
    import numpy as np

    from streams.report import plots

    x = np.arange(525_600, dtype=np.float64)  # a year of minutes
    y = np.sin(x / 500.0) + 10.0
    y[123_457] = 500.0  # one hot minute
    y[400_000] = -3.0
    r = np.full_like(y, 2.0)
    tx, ty, tr = plots.thin(x, y, r)
    assert len(tx) <= plots.MAX_LINE and len(tx) == len(ty) == len(tr)
    assert 123_457 in tx and ty.max() == 500.0 and ty.min() == -3.0
    assert (np.diff(tx) > 0).all() and (tr == 2.0).all()
    short = x[:100]
    assert plots.thin(short, y[:100])[0] is short


@pytest.mark.data
def test_llview_per_file_system_hot_zones(tmp_path: Path) -> None:
    """A real LLview job (JUWELS Booster): rates in MiB/s, episodes per file system."""
    from tests.paths import SHARED_DATA

    job = SHARED_DATA / "llview" / "job-9438058"
    if not job.exists():
        pytest.skip(f"{job} is absent (../shared/data)")
    out = tmp_path / "ll"
    assert cli(["replay", "--format", "llview", str(job), "--out", str(out), "--no-progress"]) == 0
    o = data.load([str(out)])
    dfs = sections.dfs_load(o)
    assert dfs is not None and "MiB/s" in dfs.tables[0].columns[3]
    want: dict[str, int] = defaultdict(int)
    for c in _rows(out / "hot_zones_fs.csv"):
        want[c["fs"]] += int(c["minutes"])
    per_fs = {r[0]: r[3] for r in dfs.tables[1].rows}
    assert per_fs == {fs: want.get(fs, 0) for fs in per_fs} and sum(per_fs.values()) > 0
