"""The drain engine's tables (seed 000): drain per day, hour, node state and job, the size
groups, the sliding jobs, failure to launch, recovery; and the live worker's InfluxDB rows.

:mod:`streams.stages.drain` writes them (``replay --format moab``, ``--jobs`` adds the job
columns and the recovery tables); the live drain combiner writes :data:`LIVE_TABLES`' rows.
"""

from __future__ import annotations

from streams.contracts import Table, cols

_WINDOW_COLS = cols(
    ("accounted_node_seconds", "seconds_ms", "node-seconds accrued to any state"),
    ("drain_node_seconds", "seconds_ms", "node-seconds Idle with a reservation (drain)"),
    ("unallocated_idle_node_seconds", "seconds_ms", "node-seconds Idle with rsvlist 'none'"),
    ("down_node_seconds", "seconds_ms", "node-seconds in state Down"),
    ("unaccounted_node_seconds", "seconds_ms", "node-seconds of intervals over --max-gap"),
    ("drain_pct_static", "number", "drain / (basis nodes x window length) x 100"),
    ("drain_pct_dynamic", "number", "drain / (accounted - Down) x 100"),
    ("basis_seconds_per_node", "number", "mean accounted seconds per node seen"),
    ("data_quality", "text", "`ok`, or `short` below --quality-min x length per node"),
)
DRAIN_DAILY = Table(
    "drain_daily.csv",
    (*cols(("day", "day", "calendar day in the configured zone")), *_WINDOW_COLS),
    "Drain per calendar day of the configured zone (DST days are 23 or 25 h long).",
)
DRAIN_HOURLY = Table(
    "drain_hourly.csv",
    (*cols(("hour", "instant_ms", "start of the hour")), *_WINDOW_COLS),
    "Drain per hour.",
)
NODE_STATES = Table(
    "node_states.csv",
    cols(
        ("node", "text", "node name"),
        ("state", "text", "Moab state (unknown states kept as written)"),
        ("has_rsv", "int", "1 if rsvlist was not 'none'"),
        ("has_job", "int", "1 if joblist was not 'none'"),
        ("seconds", "seconds_ms", "seconds accrued to this combination"),
    ),
    "Seconds per node, state and (reservation, job) combination (seed 000 §III-B.1).",
)
_JOB_COLS = cols(
    ("job", "text", "job or reservation id charged (first of rsvlist)"),
    ("drain_node_seconds", "seconds_ms", "idle node-seconds held for it"),
    ("nodes_charged", "int", "distinct nodes that were held for it"),
    ("first_charged", "instant_ms", "first record charged to it"),
    ("last_charged", "instant_ms", "last record charged to it"),
)
_JOB_EVENT_COLS = cols(
    ("size", "int", "nodes of the job (job events, else nodes seen running it)"),
    ("runtime", "number", "seconds from start to end (empty: not ended)"),
    ("drain_per_node", "number", "drain node-seconds / size"),
    ("drain_runtime_ratio", "number", "drain node-seconds / (size x runtime)"),
)
DRAIN_JOBS = Table(
    "drain_jobs.csv",
    _JOB_COLS,
    "Drain per job, largest first (ties by job id).",
)
DRAIN_JOBS_WITH_EVENTS = Table(
    "drain_jobs.csv",
    (*_JOB_COLS, *_JOB_EVENT_COLS),
    "Drain per job, largest first, with the job's size and runtime.",
    when="with --jobs",
)
SIZE_GROUPS = Table(
    "size_groups.csv",
    cols(
        ("group", "text", "size group of seed 000 §V-D"),
        ("jobs", "int", "jobs charged drain in the group"),
        ("drain_node_seconds", "number", "their drain"),
        ("mean_drain_node_seconds", "number", "mean drain per job"),
        ("mean_drain_per_node", "number", "mean drain per node of the job"),
        ("nodes_lo", "int", "smallest job size in the group on this machine"),
        ("nodes_hi", "int", "largest job size in the group (empty: no bound)"),
        ("scale", "text", "`absolute` (the seed's sizes) or `relative` (to the machine)"),
    ),
    "Drain by job size group (seed 000 §V-D). `--size-groups absolute`: the seed's sizes "
    "(Tiny 1-128 ... 16k+), made for Blue Waters; `relative`: the same boundaries as fractions "
    "of Blue Waters' 26,846 nodes, scaled to the machine (--nodes, else the nodes seen); "
    "`auto` (default): relative below 5,000 nodes. The summary's `size_groups` says which.",
    when="when any job was charged",
)
SLIDING_JOBS = Table(
    "sliding_jobs.csv",
    cols(
        ("rank", "int", "1 = largest drain per node"),
        ("job", "text", "job id"),
        ("drain_node_seconds", "number", "drain charged so far"),
        ("size", "int", "nodes (empty: unknown)"),
        ("drain_per_node", "number", "drain / size (or / nodes charged)"),
        ("nodes_charged", "int", "distinct nodes held for it"),
        ("first_charged", "instant_ms", "first record charged"),
        ("last_charged", "instant_ms", "last record charged"),
    ),
    "Perpetually sliding jobs: charged drain but never seen running (seed 000 §V-B).",
    when="when any job was charged",
)
FAILURE_TO_LAUNCH = Table(
    "failure_to_launch.csv",
    cols(
        ("job", "text", "job id"),
        ("drain_node_seconds", "number", "drain charged to it"),
        ("size", "int", "nodes"),
        ("runtime", "number", "seconds it ran"),
        ("drain_runtime_ratio", "number", "drain / (size x runtime)"),
    ),
    "Jobs drained for, then ran less than --ftl-threshold seconds (seed 000 §V-C).",
    when="with --jobs",
)
BACKFILL_DAILY = Table(
    "backfill_daily.csv",
    cols(
        ("day", "day", "calendar day in the configured zone"),
        (
            "backfill_node_seconds",
            "seconds_ms",
            "node-seconds of backfilled jobs in the day, running ones up to the end of the log "
            "(empty: the job events do not say which jobs were backfilled)",
        ),
        ("drain_node_seconds", "seconds_ms", "drain of the day (drain_daily.csv)"),
        (
            "backfill_efficiency",
            "number",
            "backfill / (backfill + drain) (empty: unknown, or neither in the day)",
        ),
    ),
    "Back-fill recovery per day (seed 000 §VI-A): how much of the node-time held for "
    "upcoming jobs was given back to backfilled jobs. Needs job events that flag backfilled "
    "jobs (sacct Flags, the simulator); a job without the flag counts as not backfilled.",
    when="with --jobs",
)
BACKLOG_HOURLY = Table(
    "backlog_hourly.csv",
    cols(
        ("hour", "instant_ms", "start of the hour"),
        ("idle_unallocated_node_seconds", "seconds_ms", "node-seconds Idle with rsvlist 'none'"),
        ("mean_idle_nodes", "number", "unallocated idle node-seconds / hour length"),
        ("jobs_queued", "int", "jobs queued (submitted, not started) at some time in the hour"),
        ("queued_node_seconds", "seconds_ms", "their nodes x time queued in the hour"),
        ("mean_queue_length", "number", "queued job-seconds / hour length"),
        ("smallest_queued_nodes", "int", "nodes of the smallest job queued in the hour"),
        (
            "verdict",
            "text",
            "`no_idle`; `no_backlog` (idle, nothing queued: lack of workload); `backlog_fits` "
            "(the smallest queued job fits in the mean idle nodes: room the scheduler did not "
            "use); `backlog_too_large` (every queued job needs more nodes than were idle)",
        ),
    ),
    "Unallocated idle time beside the queue, per hour (seed 000 §VI-B): is idle node-time a "
    "lack of suitable workload or room the scheduler left? The verdicts are a first "
    "classification of ours (the seed leaves it open).",
    when="with --jobs",
)
TABLES = (
    DRAIN_DAILY,
    DRAIN_HOURLY,
    NODE_STATES,
    DRAIN_JOBS,
    DRAIN_JOBS_WITH_EVENTS,
    SIZE_GROUPS,
    SLIDING_JOBS,
    FAILURE_TO_LAUNCH,
    BACKFILL_DAILY,
    BACKLOG_HOURLY,
)
FILES = sorted({t.file for t in TABLES} | {"summary_drain.json"})

# The rows the live worker writes to InfluxDB (docs/influxdb.md: ``drain``, ``node_states``,
# ``drain_job``), as tables: ``DrainStage(live=True)`` (``replay --influx``) writes them beside
# the reports, and the worker's combiner makes the same rows of its windows and jobs. They are
# InfluxDB's alone: no file (``replay`` keeps them out of --out), not in TABLES.
_LIVE_WHEN = "replay --influx (InfluxDB only, no file)"
_PROVISIONAL = ("provisional", "int", "true while the window ends after the last record")
LIVE_WINDOWS = Table(
    "drain_windows",
    (
        *cols(
            ("window", "text", "minute, hour or day"),
            ("start", "instant_ms", "start of the window"),
            ("length_seconds", "seconds_ms", "length of the window"),
            ("nodes", "int", "nodes seen in the window"),
        ),
        *_WINDOW_COLS,
        *cols(_PROVISIONAL),
    ),
    "Drain per minute, hour and day as the live worker writes it (measurement ``drain``).",
    when=_LIVE_WHEN,
)
LIVE_WINDOW_STATES = Table(
    "drain_window_states",
    cols(
        ("window", "text", "hour or day"),
        ("start", "instant_ms", "start of the window"),
        ("state", "text", "Moab state"),
        ("has_rsv", "int", "1 if rsvlist was not 'none'"),
        ("has_job", "int", "1 if joblist was not 'none'"),
        ("node_seconds", "seconds_ms", "node-seconds in this state and combination"),
        _PROVISIONAL,
    ),
    "Node-seconds per state and (reservation, job) combination of an hour or day, every "
    "node together (measurement ``node_states``).",
    when=_LIVE_WHEN,
)
LIVE_JOBS = Table(
    "drain_job_totals",
    cols(
        ("job", "text", "job or reservation id charged"),
        ("drain_node_seconds", "seconds_ms", "idle node-seconds held for it"),
        ("nodes_charged", "int", "distinct nodes that were held for it"),
        ("first_charged_ms", "int", "first record charged to it (POSIX ms)"),
        ("last_charged_ms", "int", "last record charged to it (POSIX ms)"),
        ("nodes_running", "int", "nodes seen running it"),
        ("time", "instant_ms", "the point's time: its first charge as first reported"),
    ),
    "A job's running drain totals (measurement ``drain_job``): every later total of the job "
    "overwrites the same point.",
    when=_LIVE_WHEN,
)
LIVE_TABLES = (LIVE_WINDOWS, LIVE_WINDOW_STATES, LIVE_JOBS)
