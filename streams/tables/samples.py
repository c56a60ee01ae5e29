"""The sample engine's tables (seed 003): job utilisation, DFS load per minute, hot zones and
the jobs behind them, write sizes.

:mod:`streams.stages.samples` writes them from node-sample traces (MB, MB/s) and LLview job
directories (MiB, MiB/s: the unit stays the source's).
"""

from __future__ import annotations

from models.samples.writesize import BUCKET_LABELS, BUCKETS
from streams.contracts import Table, cols

JOB_UTILIZATION = Table(
    "job_utilization.csv",
    cols(
        ("job", "text", "job id"),
        ("nodes", "int", "nodes the job was measured on"),
        ("cores", "number", "allocated cores"),
        ("measures", "int", "measures (sweeps x processes)"),
        ("core_util_mean", "number", "mean core utilisation, 1.0 = every allocated core busy"),
        ("mem_mean_ratio", "number", "mean memory / theoretical (--mem-per-core x cores)"),
        ("mem_max_core_ratio", "number", "largest memory per core / theoretical"),
        ("swap_kb_max", "number", "largest swap, KiB"),
        ("sa_core_seconds", "number", "squashed area, core-seconds"),
        ("write_max_node_mb_s", "number", "fastest write of one node, source unit/s"),
        ("write_total_mb", "number", "data written, source unit"),
    ),
    "Utilisation per job (seed 003 §4); ratios as fractions, empty = unknown.",
)
_DFS_COLS = cols(
    ("minute", "instant_ms", "start of the minute"),
    ("write_mb_s", "number", "write speed summed over jobs, source unit/s"),
    ("read_mb_s", "number", "read speed summed over jobs"),
    ("jobs_writing", "int", "jobs that wrote in the minute"),
)
_HOT_COLS = cols(
    ("start", "instant_ms", "start of the first hot minute"),
    ("end", "instant_ms", "end of the last hot minute"),
    ("peak_mb_s", "number", "highest write speed, source unit/s"),
    ("minutes", "int", "hot minutes in the episode"),
    ("top_jobs", "text", "`job:share` of the data written in the hot minutes, `;`-separated"),
)
DFS_MINUTELY = Table(
    "dfs_minutely.csv", _DFS_COLS, "DFS load per minute (seed 003 §5, Fig. 16 and 18)."
)
HOT_ZONES = Table(
    "hot_zones.csv",
    _HOT_COLS,
    "Hot-zone episodes: minutes above the threshold, the jobs behind them (seed 003 §5.2). "
    "The threshold is compared in the source's unit/s (the summary's hot_zone_threshold and "
    "rate_unit; a threshold given in MB/s is converted exactly for MiB/s sources).",
)
JOB_WRITE_SERIES = Table(
    "job_write_series.csv",
    cols(
        ("job", "text", "job id"),
        ("minute", "instant_ms", "start of the minute"),
        ("write_mb_s", "number", "the job's write speed summed over its nodes"),
        ("read_mb_s", "number", "its read speed"),
    ),
    "Each job's write and read speed per minute.",
)
_FS = cols(("fs", "text", "file system"))
DFS_MINUTELY_FS = Table(
    "dfs_minutely_fs.csv",
    (*_FS, *_DFS_COLS),
    "DFS load per file system and minute.",
    when="when the source has per-file-system series",
)
HOT_ZONES_FS = Table(
    "hot_zones_fs.csv",
    (*_FS, *_HOT_COLS),
    "Hot-zone episodes per file system: each its own threshold (--hot-zone-fs FS=RATE, "
    "e.g. from `drainwatch calibrate dfs`), else --hot-zone; the summary's file_systems "
    "says which.",
    when="when the source has per-file-system series",
)
WRITE_SIZES = Table(
    "write_sizes.csv",
    cols(
        ("job", "text", "job id"),
        ("intervals", "int", "sampling intervals with write calls (resets ignored)"),
        ("write_calls", "number", "write calls (delta syscw) in those intervals"),
        (
            "write_bytes",
            "number",
            "bytes written in those intervals (delta wchar where both samples have it, "
            "else delta write_bytes)",
        ),
        ("bytes_per_call", "number", "write_bytes / write_calls"),
        (
            "measure",
            "text",
            "the byte counter used: wchar (every interval), write_bytes (none: traces "
            "without wchar) or mixed",
        ),
        *(
            (f"{w}_{b}", "number", f"{w.replace('_', ' ')} of the intervals whose mean is {label}")
            for w in ("write_calls", "write_bytes")
            for b, label in zip(BUCKETS, BUCKET_LABELS, strict=True)
        ),
    ),
    "Write sizes per job (seed 003 §5.2, Fig. 15): per process and sampling interval, "
    "delta wchar / delta syscw (bytes per write call, any target) when both samples carry "
    "wchar, else delta write_bytes / delta syscw (storage bytes per write call), "
    "bucketed by that mean at 4 KiB, 64 KiB and 1 MiB; jobs with no write call have no row.",
    when="with sample traces (not LLview)",
)
TABLES = (
    JOB_UTILIZATION,
    DFS_MINUTELY,
    HOT_ZONES,
    JOB_WRITE_SERIES,
    DFS_MINUTELY_FS,
    HOT_ZONES_FS,
    WRITE_SIZES,
)
FILES = sorted({t.file for t in TABLES} | {"summary_samples.json"})
