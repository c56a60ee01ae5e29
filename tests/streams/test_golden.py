"""Replay gives the numbers it gave before the streams/ layout change (tests/golden/).

The goldens were written by the three replay engines as they stood at commit 3511bcf (see
tests/golden/make_golden.py). Compared here are values, not formatting: numbers within half a
unit of the last digit either side printed, times as instants, everything else as text; summaries
key by key through the renames listed below.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.cli import main
from tests.golden.make_golden import CASES, DATA, HERE, argv

# file written by the engine before -> file written now
RENAMED_FILES: dict[str, dict[str, str]] = {
    "summary.json": {
        "moab": "summary_drain.json",
        "moab_nojobs": "summary_drain.json",
        "samples": "summary_samples.json",
        "llview": "summary_samples.json",
    },
}
# columns added to a table since the goldens were written (by file): left out of the comparison
ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "runtime_predictions.csv": ("partition",),  # the job's partition, a tag in InfluxDB
}
# summary key prefixes (dotted paths) before -> now, per engine; None: no longer reported
_JOBS = {
    "events_read": "records",
    "events_by_type": "usage.events_by_type",
    "section_nodes_from": "capability.section_nodes_from",
    "rows": "outputs",
    "usage_totals": "usage",
    "ends_without_start": "runtime.ends_without_start",
}
_SAMPLES = {
    "rejects": "rejected_by_reason",
    **{
        k: f"samples.{k}"
        for k in (
            "file_systems",
            "io_unit",
            "rate_unit",
            "hot_zone_threshold",
            "hot_zone_episodes",
            "hot_zone_minutes",
            "jobs",
            "minutes",
            "classes",
            "histograms",
        )
    },
}
_DRAIN = {
    "lines_read": "lines",
    "records": "drain.records",
    "ignored_other_lines": "ignored",
    "window.first": "drain.first_record",
    "window.last": "drain.last_record",
    "window.tz": "tz",
    "job_events.jobs": "job_times.jobs",
    "job_events.files": None,  # the job-event files are listed under "inputs"
    "job_events.rejected": None,  # job-event rejects count in "rejected" and per input
    **{
        k: f"drain.{k}"
        for k in (
            "intervals",
            "gaps_over_max_gap",
            "nodes",
            "basis_nodes",
            "jobs_and_reservations",
            "jobs_charged_drain",
            "records_by_state",
            "unknown_states",
            "max_gap_seconds",
        )
    },
}
RENAMED_KEYS: dict[str, dict[str, str | None]] = {
    # "lines" now counts the --jobs file's lines too: the Moab log's are compared below
    "moab": {**_DRAIN, "lines_read": None},
    "moab_nojobs": {**_DRAIN, "job_events.jobs": None},  # 0 before; no job feed now
    "jobevents": _JOBS,
    "sacct": _JOBS,
    "swf": _JOBS,
    "samples": _SAMPLES,
    "llview": _SAMPLES,
}


def renamed(case: str, key: str) -> str | None:
    rules = RENAMED_KEYS[case]
    for old in sorted(rules, key=len, reverse=True):
        if key == old or key.startswith(old + "."):
            new = rules[old]
            return None if new is None else new + key[len(old) :]
    return key


NOT_COMPARED = re.compile(r"^(timings_s|timings_seconds|lines_per_second|inputs|files|log)(\.|$)")

NUM = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
NUM_IN_TEXT = re.compile(r"[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")


def _decimals(s: str) -> int:
    m = re.match(r"^[+-]?\d*\.?(\d*)(?:[eE]([+-]?\d+))?$", s)
    if not m:
        return 0
    return len(m.group(1)) - int(m.group(2) or 0)


def same_number(old: str, new: str) -> bool:
    a, b = float(old), float(new)
    tol = 0.5 * 10.0 ** -_decimals(old) + 0.5 * 10.0 ** -_decimals(new)
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=tol * 1.000001)


def same_cell(old: str, new: str) -> bool:
    if old == new:
        return True
    if NUM.match(old):
        return bool(NUM.match(new)) and same_number(old, new)
    if TIME.match(old) and TIME.match(new):
        return datetime.fromisoformat(old) == datetime.fromisoformat(new)
    nums_old, nums_new = NUM_IN_TEXT.findall(old), NUM_IN_TEXT.findall(new)
    return (
        NUM_IN_TEXT.sub("#", old) == NUM_IN_TEXT.sub("#", new)
        and len(nums_old) == len(nums_new)
        and all(same_number(a, b) for a, b in zip(nums_old, nums_new, strict=True))
    )


def _table(text: str, delimiter: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text), delimiter=delimiter))


def compare_table(name: str, old: str, new: str, delimiter: str = ",") -> None:
    assert "\r" not in new, f"{name}: CR in line ends"
    a, b = _table(old, delimiter), _table(new, delimiter)
    assert len(a) == len(b), f"{name}: {len(a)} rows before, {len(b)} now"
    for i, (ra, rb) in enumerate(zip(a, b, strict=True)):
        assert len(ra) == len(rb), f"{name} row {i}: {ra} vs {rb}"
        for ca, cb in zip(ra, rb, strict=True):
            assert same_cell(ca, cb), f"{name} row {i}: {ca!r} before, {cb!r} now\n{ra}\n{rb}"


def without_columns(text: str, names: tuple[str, ...], delimiter: str = ",") -> str:
    """The table with the columns ``names`` (by its header) taken out."""
    rows = _table(text, delimiter)
    keep = [i for i, c in enumerate(rows[0]) if c not in names] if rows else []
    assert not rows or len(keep) == len(rows[0]) - len(names), (names, rows[0])
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\n").writerows(
        [r[i] for i in keep] for r in rows
    )
    return out.getvalue()


def _flatten(x: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(x, dict):
        out: dict[str, Any] = {}
        for k, v in x.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out or {prefix[:-1]: {}}
    return {prefix[:-1]: x}


def same_json_value(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return same_number(repr(a), repr(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) and isinstance(b, str):
        return same_cell(a, b)
    return a == b


def compare_summary(case: str, name: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    fo, fn = _flatten(old), _flatten(new)
    for key, value in fo.items():
        if NOT_COMPARED.match(key):
            continue
        target = renamed(case, key)
        if target is None:
            continue
        assert target in fn, f"{name}: summary key {key!r} (now {target!r}) missing"
        assert same_json_value(value, fn[target]), (
            f"{name}: summary {key}: {value!r} before, {fn[target]!r} now"
        )


@pytest.mark.parametrize("case", sorted(CASES))
def test_replay_matches_golden(case: str, tmp_path: Path) -> None:
    _, needs_data = CASES[case]
    if needs_data and not DATA.is_dir():
        pytest.skip(f"needs {DATA}")
    out = tmp_path / case
    assert main(argv(case, out)) == 0
    golden = HERE / case
    for g in sorted(golden.iterdir()):
        raw = g.read_bytes()
        name = g.name.removesuffix(".gz")
        now_name = RENAMED_FILES.get(name, {}).get(case, name)
        now = out / now_name
        assert now.is_file(), f"{case}: {now_name} not written"
        if name.endswith(".json"):
            compare_summary(
                case, f"{case}/{name}", orjson.loads(raw), orjson.loads(now.read_bytes())
            )
        else:
            sep = "\t" if name.endswith(".tsv") else ","
            text = now.read_text()
            if name in ADDED_COLUMNS:
                text = without_columns(text, ADDED_COLUMNS[name], sep)
            compare_table(f"{case}/{name}", gzip.decompress(raw).decode(), text, sep)
    if case == "moab":  # lines_read was the Moab log's; now that input's own "lines"
        old = orjson.loads((golden / "summary.json").read_bytes())
        new = orjson.loads((out / "summary_drain.json").read_bytes())
        assert new["inputs"][0]["lines"] == old["lines_read"], new["inputs"]
