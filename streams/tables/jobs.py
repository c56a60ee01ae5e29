"""The job engine's tables (seeds 001, 002, 004 and Open XDMoD usage), one or two per
analytic, and the short-job lookup files.

Each stage module of :mod:`streams.stages` writes its own: usage, short jobs (with
``fairshare_adjust.tsv`` / ``.json``), turnover, run-time prediction, capability, fair share and
the release forecast.
"""

from __future__ import annotations

from streams.contracts import Table, cols

USAGE_DAILY = Table(
    "usage_daily.csv",
    cols(
        ("day", "day", "calendar day in the configured zone"),
        ("resource", "text", "--resource, else the first input's file stem"),
        ("cpu_hours", "number", "core-hours of jobs clipped to the day (XDMoD rule)"),
        ("node_hours", "number", "node-hours clipped to the day"),
        ("wall_hours", "number", "wall-clock hours clipped to the day"),
        ("jobs_started", "int", "jobs that started that day"),
        ("jobs_ended", "int", "jobs that ended that day"),
    ),
    "Usage per day with Open XDMoD Jobs-realm semantics (jobs that ended, with nodes).",
)
SHORTJOBS = Table(
    "shortjobs.csv",
    cols(
        ("ts", "instant", "the 3-minute tick"),
        ("holder_kind", "text", "`user` or `group`"),
        ("holder", "text", "user or group name"),
        ("n_short", "int", "N_s: short jobs ended in the tick"),
        ("penalty_seconds", "number", "T_s: missing run time x slots"),
        ("adjust", "number", "A(t) = 0.9 A(t-1) + 0.1 T_s(t)"),
    ),
    "Short-job penalties per holder and tick while A(t) is at or above the floor (1 "
    "slot-second: below it the holder leaves the lookup table, its row shows 0.0 and the hook "
    "returns 0.0), the trace's last, partly filled tick included (seed 002).",
)
TURNOVER = Table(
    "turnover.csv",
    cols(
        ("window_start", "instant", "window start"),
        ("window_end", "instant", "window end"),
        ("n_gaps", "int", "slot refills in the window"),
        (
            "turnover_seconds",
            "number",
            "sum of w: slot-seconds freed slots waited while the job that refilled them was "
            "queued and had all its slots (the seed's latest slot)",
        ),
        ("unusable_slots", "number", "U = sum(w) / T"),
        (
            "idle_seconds",
            "number",
            "slot-seconds of the same gaps before that: an empty queue, or the job waiting for "
            "its other slots",
        ),
        ("idle_slots", "number", "idle_seconds / T"),
    ),
    "Slot turnover per window (seed 002): each gap between a job's end and the next start on "
    "its slot (up to --turnover-max-gap) is turnover from the time the refilling job was "
    "queued and its latest slot free, idle before; turnover_seconds + idle_seconds = the "
    "gaps' slot-seconds in the window.",
)
TURNOVER_HIST = Table(
    "turnover_hist.csv",
    cols(
        ("w_lo_s", "number", "bin start, seconds"),
        ("w_hi_s", "number", "bin end, seconds"),
        ("count", "int", "refills with turnover w in the bin"),
    ),
    "Histogram of the turnover times w (seed 002, 'Estimating w').",
)
RUNTIME_PREDICTIONS = Table(
    "runtime_predictions.csv",
    cols(
        ("job", "text", "job id"),
        ("user", "text", "user"),
        ("name", "text", "job name"),
        (
            "history_runs",
            "int",
            "runs of (user, name) before this one (all, or the last --history)",
        ),
        (
            "predicted_s",
            "number",
            "Avg: mean of the history without its shortest and longest run "
            "(empty: unknown, *1-day)",
        ),
        ("upper_s", "number", "upper estimate (Estim.95%/Max)"),
        ("actual_s", "number", "the run time"),
        ("overran", "int", "1 if it ran past upper + 60 s"),
        ("min_s", "number", "Min: shortest run of the history"),
        ("max_s", "number", "Max: longest run of the history"),
        ("band_min_s", "number", "predicted_s - 3 % (the seed's expected range)"),
        ("band_max_s", "number", "predicted_s + 3 %"),
        ("std_s", "number", "Std. Dev of the kept runs"),
        ("spread_s", "number", "Spread: longest - shortest kept run"),
        ("partition", "text", "the job's partition (empty: the source records none)"),
    ),
    "Run-time prediction of every ended job from its (user, job name) history, with Figure 4's "
    "columns (seed 001); the Figure 4 columns are empty while the run time is unknown.",
)
CAPABILITY_DAILY = Table(
    "capability_daily.csv",
    cols(
        ("day", "day", "calendar day in the configured zone"),
        ("large_node_hours", "number", "node-hours of jobs on >= 40 % of the section"),
        ("small_node_hours", "number", "node-hours of the other jobs"),
        ("backfill_node_hours", "number", "node-hours of small backfilled jobs (empty: unknown)"),
        ("cup40", "number", "large / (large + small)"),
        ("cup40_modified", "number", "large / (large + small - backfill) (empty: unknown)"),
        (
            "red_node_hours",
            "number",
            "node-hours of jobs in the Red section's partitions (--red-partitions; empty: unknown)",
        ),
        (
            "black_node_hours",
            "number",
            "node-hours of jobs in the other partitions (empty: unknown)",
        ),
        ("red_share", "number", "measured f_R = red / (red + black) (empty: unknown)"),
        (
            "p_cup_factor",
            "number",
            "0.80 - cup40 while cup40 < 0.80: P_CUP = this x (job nodes / (0.40 x section))^p x "
            "the fair-share factor (empty: goal met, the standard factor applies)",
        ),
    ),
    "Capability use per day (seed 004: CUP40, the modified CUP, P_CUP's day term and the "
    "Red/Black section node-hours). Large = at least ceil(0.40 x section) nodes. Backfill "
    "node-hours and the modified CUP are empty when the source records no backfill flag (SWF, "
    "sacct without Flags); the Red/Black columns when it records no partition or no "
    "--red-partitions is given (the summary says why).",
)
FAIRSHARE_USAGE = Table(
    "fairshare_usage.csv",
    cols(
        ("ts", "instant", "day end (in the configured zone) the usage is valued at"),
        ("holder_kind", "text", "`user` or `account`"),
        ("holder", "text", "user or account"),
        ("usage_node_hours", "number", "decayed usage at ts"),
        ("charged_node_hours", "number", "node-hours charged, undecayed"),
        ("refunded_node_hours", "number", "node-hours refunded (NODE_FAIL)"),
    ),
    "Fair-share usage with half-life decay at each day end, for the holders charged or "
    "refunded that day, and for every holder at the last one (seed 004).",
)
RELEASE_FORECAST = Table(
    "release_forecast.csv",
    cols(
        ("ts", "instant", "when the job was submitted (the forecast is made then)"),
        ("job", "text", "the submitted job that needs the nodes"),
        ("need", "int", "its nodes"),
        ("free", "int", "section nodes not held by a running job at ts"),
        ("missing", "int", "need - free (Figure 9's first Need)"),
        ("step", "int", "1, 2, ...: the running jobs in order of expected end (0: none needed)"),
        ("holder_job", "text", "the running job releasing nodes at this step"),
        ("holder_name", "text", "its job name"),
        ("holder_nodes", "int", "its nodes"),
        ("release_at", "instant", "its expected end: start + requested walltime"),
        ("free_after", "int", "nodes free once it has ended (Free)"),
        ("need_after", "int", "nodes still missing once it has ended (Need)"),
        ("ready_at", "instant", "when `need` nodes are free (empty: the running jobs cannot)"),
        (
            "late_by_s",
            "number",
            "ready_at - reserved_start (else - ts): how late the nodes are (empty: never)",
        ),
        (
            "actual_late_s",
            "number",
            "the job's start - reserved_start (else - ts) (empty: not started in the trace)",
        ),
        (
            "reserved_start",
            "instant",
            "the job's reservation start, from its submit or start event (empty: none)",
        ),
    ),
    "Node-release forecast for every submitted job with nodes (seed 001, Figure 9's Free / "
    "Need per job end): at its submit, the running jobs with a requested walltime release "
    "their nodes one after another in order of start + walltime (overrunning jobs any moment); "
    "one row per release needed, until the job's nodes are free. The job is wanted at its "
    "reservation's start when its submit or start event carries one (`reserved_start`), "
    "else at its submit; "
    "the jobs queued ahead of it are not counted; running jobs without a requested walltime are "
    "left out (the summary counts them).",
)
FAIRSHARE_ADJUST_TSV = "fairshare_adjust.tsv"
FAIRSHARE_ADJUST_JSON = "fairshare_adjust.json"
TABLES = (
    USAGE_DAILY,
    SHORTJOBS,
    TURNOVER,
    TURNOVER_HIST,
    RUNTIME_PREDICTIONS,
    CAPABILITY_DAILY,
    FAIRSHARE_USAGE,
    RELEASE_FORECAST,
)
FILES = sorted(
    {t.file for t in TABLES} | {FAIRSHARE_ADJUST_TSV, FAIRSHARE_ADJUST_JSON, "summary_jobs.json"}
)
