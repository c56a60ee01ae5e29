"""The six drainwatch dashboards, over the measurements of docs/influxdb.md, in InfluxQL.

Each panel's description says what its number means and whose method it follows: seed 000
(drain time), 001 (run-time prediction), 002 (short-job penalties, turnover), 003 (DFS hot
zones, utilisation), 004 (capability use). Alert thresholds are drawn from the same settings
the worker's alerts use (``streams/config/``, ``alerts.*``).
"""

from __future__ import annotations

from typing import Any

from models.drain.basis import QUALITY_MIN
from streams.config import Settings
from streams.grafana.panels import (
    CLUSTER,
    CORE_HOURS,
    HOURS,
    NODE_HOURS,
    Dashboard,
    bargauge,
    cluster_variable,
    histogram,
    query_variable,
    right_axis,
    stat,
    table,
    target,
    textbox_variable,
    timeseries,
)

JOB = '"job" =~ /^$job/'  # the jobs dashboard's job variable (a prefix; empty: every job)
USER = '"holder" =~ /^$user$/'
# the job's partition (a tag where the job events name one; All also takes jobs without one)
PARTITION = '"partition" =~ /^$partition$/'


def drain(s: Settings) -> Dashboard:
    day = f"\"window\" = 'day' AND {CLUSTER} AND $timeFilter"
    hour = f"\"window\" = 'hour' AND {CLUSTER} AND $timeFilter"
    return Dashboard(
        "drainwatch-drain",
        "drainwatch: drain overview",
        "Drain accounting (seed 000): idle nodes held for a reservation, by day, hour and state.",
        [
            timeseries(
                "Drain % per day",
                "Idle node-seconds held by a reservation over the static basis (nodes x day) "
                "and over the dynamic basis (non-Down node-seconds); seed 000 §III-B.",
                target(
                    'SELECT "drain_pct_static" AS "static basis", "drain_pct_dynamic" AS '
                    f'"dynamic basis" FROM "drain" WHERE {day}'
                ),
                unit="percent",
                dots=True,
            ),
            timeseries(
                "Drain % per hour",
                "The same percentages per hour window (seed 000 §III-B); the open hour is "
                "provisional until its end.",
                target(
                    'SELECT "drain_pct_static" AS "static basis", "drain_pct_dynamic" AS '
                    f'"dynamic basis" FROM "drain" WHERE {hour}'
                ),
                unit="percent",
            ),
            timeseries(
                "Basis quality band (mean seconds per node / window length)",
                f"Below {QUALITY_MIN:.0%} a window is flagged short: its nodes reported for "
                "less of it than they should (seed 000 §III-B.3: missing log, gaps > max-gap).",
                target(
                    'SELECT "basis_seconds_per_node" / "length_seconds" AS "day basis" '
                    f'FROM "drain" WHERE {day}',
                    "A",
                ),
                target(
                    'SELECT "basis_seconds_per_node" / "length_seconds" AS "hour basis" '
                    f'FROM "drain" WHERE {hour}',
                    "B",
                ),
                unit="percentunit",
                threshold=QUALITY_MIN,
            ),
            timeseries(
                "Node-hours per day: drain, unallocated idle, down, unaccounted",
                "Daily node-hours by category (seed 000 §III-B: drain = Idle with a "
                "reservation; unallocated = Idle without; unaccounted = gaps past max-gap).",
                target(
                    'SELECT "drain_node_seconds" / 3600 AS "drain", '
                    '"unallocated_idle_node_seconds" / 3600 AS "unallocated idle", '
                    '"down_node_seconds" / 3600 AS "down", "unaccounted_node_seconds" / 3600 '
                    f'AS "unaccounted" FROM "drain" WHERE {day}'
                ),
                unit=NODE_HOURS,
                bars=True,
                stacked=True,
            ),
            table(
                "Node-state breakdown (node-hours)",
                "Node-hours per Moab state and whether the node had a reservation / a job "
                "(seed 000 §III-B.1), summed over the day windows of the range.",
                target(
                    'SELECT sum("node_seconds") / 3600 AS "node_hours" FROM "node_states" '
                    f'WHERE {day} GROUP BY "state", "has_rsv", "has_job"',
                    fmt="table",
                ),
                unit=NODE_HOURS,
                sort="node_hours",
                units={"has_rsv": "none", "has_job": "none"},
            ),
            bargauge(
                "Drain by job size group (node-hours)",
                "Drain charged to the jobs of each size group (seed 000 §V-D; groups scaled to "
                "the machine below 5,000 nodes), the latest running total.",
                target(
                    'SELECT last("drain_node_seconds") / 3600 FROM "drain_size_group" '
                    f'WHERE {CLUSTER} AND $timeFilter GROUP BY "group"',
                    alias="$tag_group",
                ),
                unit=NODE_HOURS,
            ),
            timeseries(
                "Drain % per minute: provisional and final",
                "The live worker writes each open window as provisional and overwrites it with "
                "the final row when event time closes it (docs/influxdb.md); over a long range "
                "each point is the mean of the minutes it covers.",
                # a minute a point over an hour; over a week, the mean of each pixel's minutes
                # (GROUP BY $__interval: the browser is not sent 10,000 points a series)
                target(
                    'SELECT mean("drain_pct_dynamic") AS "final" FROM "drain" WHERE '
                    f'"window" = \'minute\' AND "provisional" = false AND {CLUSTER} AND '
                    "$timeFilter GROUP BY time($__interval) fill(none)",
                    "A",
                ),
                target(
                    'SELECT mean("drain_pct_dynamic") AS "provisional" FROM "drain" WHERE '
                    f'"window" = \'minute\' AND "provisional" = true AND {CLUSTER} AND '
                    "$timeFilter GROUP BY time($__interval) fill(none)",
                    "B",
                ),
                unit="percent",
                width=24,
                points=True,
            ),
        ],
        [cluster_variable("drain")],
    )


def jobs(s: Settings) -> Dashboard:
    ftl = s.alerts.ftl_node_hours
    return Dashboard(
        "drainwatch-jobs",
        "drainwatch: jobs",
        "Per-job drain (seed 000 §V), sliding jobs, failure to launch, run-time predictions "
        "(seed 001). Set `job` (a prefix) to follow one job from the other dashboards.",
        [
            table(
                "Top drain jobs",
                "Jobs by drain charged, largest first (node-hours held idle for them before "
                "they started, seed 000 §V-A), with size, run time and drain per node.",
                target(
                    'SELECT "drain_node_seconds" / 3600 AS "drain_node_hours", "job", '
                    '"nodes_charged", "size", "runtime", "drain_per_node" FROM "job" '
                    f"WHERE {JOB} AND {CLUSTER} AND $timeFilter",
                    fmt="table",
                ),
                unit="short",
                sort="drain_node_hours",
                link_job=True,
                width=24,
                time="first charged",
                units={"runtime": "s", "drain_per_node": "s"},
            ),
            table(
                "Perpetually sliding jobs (never seen running)",
                "Jobs nodes were held for that no node has run yet, by drain per node charged "
                f"(seed 000 §V-A.2); the worker alerts past {s.alerts.sliding_node_hours:g} "
                "node-hours.",
                target(
                    'SELECT "job", "drain_node_seconds" / 3600 AS "drain_node_hours", '
                    '"nodes_charged", "drain_node_seconds" / "nodes_charged" / 3600 AS '
                    '"drain_per_node_h" FROM "drain_job" '
                    f'WHERE "nodes_running" = 0 AND {JOB} AND {CLUSTER} AND $timeFilter',
                    fmt="table",
                ),
                unit="short",
                sort="drain_node_hours",
                link_job=True,
                time="first charged",
                units={"drain_per_node_h": HOURS},
            ),
            table(
                "Failure to launch (drained, then ran < 30 s)",
                "Jobs that held nodes idle and then ran for under 30 s (seed 000 §V-C); the "
                f"alert fires at {ftl:g} node-hours of drain.",
                target(
                    'SELECT "job", "drain_node_seconds" / 3600 AS "drain_node_hours", '
                    '"runtime", "size" FROM "job" WHERE "runtime" < 30 AND '
                    f"{JOB} AND {CLUSTER} AND $timeFilter",
                    fmt="table",
                ),
                unit="short",
                sort="drain_node_hours",
                link_job=True,
                time="first charged",
                units={"runtime": "s"},
            ),
            timeseries(
                "Drain / run time per job",
                "Drain node-seconds over the job's node-seconds of run (seed 000 §V-B): above 1 "
                "the machine lost more waiting for the job than the job used.",
                target(
                    'SELECT "drain_runtime_ratio" FROM "job" WHERE '
                    f"{JOB} AND {CLUSTER} AND $timeFilter",
                    alias="drain / run time",
                ),
                points=True,
            ),
            table(
                "Run-time predictions vs actual",
                "Per (user, job name): trimmed mean of past runs, upper estimate (mean + 1.96 "
                "σ, at least the longest), actual run time; overran = past upper + 60 s "
                "(seed 001).",
                target(
                    'SELECT "job", "name", "history_runs", "predicted_s", "upper_s", '
                    '"actual_s", "overran" FROM "runtime_prediction" WHERE "user" =~ '
                    f"/^$user$/ AND {PARTITION} AND {JOB} AND {CLUSTER} AND $timeFilter",
                    fmt="table",
                ),
                unit="s",
                link_job=True,
                time="ended",
                width=24,
                units={"history_runs": "none", "overran": "none"},
            ),
            table(
                "Running jobs past their prediction (seed 001's red rows)",
                f"Jobs still running {s.alerts.overrun_margin:g} s past their upper estimate "
                "(seed 001's red rows): the worker's overrun alerts, firing = 1 while they run on.",
                target(
                    'SELECT last("firing") AS "firing", last("value") AS "running_s", '
                    'last("threshold") AS "upper_s" FROM "alerts" WHERE "kind" = \'overrun\' '
                    f'AND {CLUSTER} AND $timeFilter GROUP BY "subject"',
                    fmt="table",
                ),
                unit="short",
                width=24,
                units={"firing": "none", "running_s": "s", "upper_s": "s"},
            ),
            table(
                "Node-release forecast (seed 001 Fig. 9)",
                "At each submit, the running jobs in order of expected end (start + requested "
                "walltime) whose release the job's nodes wait for: nodes still needed after "
                "each (Need), when all are free and how late against its reservation (seed 001 "
                "§17, Fig. 9); actual late fills in when the job starts.",
                target(
                    'SELECT "job", "late_by_s", "actual_late_s", "step", "need", "missing", '
                    '"holder_job", "holder_nodes", "release_at_s" * 1000 AS "release_at", '
                    '"need_after", "ready_at_s" * 1000 AS "ready_at" FROM '
                    f'"release_forecast" WHERE {JOB} AND {CLUSTER} AND $timeFilter',
                    fmt="table",
                ),
                unit="short",
                sort="late_by_s",
                link_job=True,
                width=24,
                time="submitted",
                units={
                    "release_at": "dateTimeAsIso",
                    "ready_at": "dateTimeAsIso",
                    "late_by_s": "s",
                    "actual_late_s": "s",
                },
            ),
            timeseries(
                "Predicted vs actual run time",
                "Each ended job's actual run time beside its upper estimate (seed 001 Fig. 4).",
                target(
                    'SELECT "actual_s" AS "actual", "upper_s" AS "upper estimate" FROM '
                    f'"runtime_prediction" WHERE "user" =~ /^$user$/ AND {PARTITION} AND '
                    f"{JOB} AND {CLUSTER} AND $timeFilter"
                ),
                unit="s",
                points=True,
                width=24,
            ),
        ],
        [
            cluster_variable("job"),
            query_variable(
                "user", "user", 'SHOW TAG VALUES FROM "runtime_prediction" WITH KEY = "user"'
            ),
            query_variable(
                "partition",
                "partition",
                'SHOW TAG VALUES FROM "runtime_prediction" WITH KEY = "partition"',
            ),
            textbox_variable("job", "job", "a job id, or its beginning; empty: every job"),
        ],
    )


def shortjobs(s: Settings) -> Dashboard:
    where = f"{CLUSTER} AND $timeFilter"
    return Dashboard(
        "drainwatch-shortjobs",
        "drainwatch: short jobs and fair share",
        "Short-job penalties and slot turnover (seed 002), fair-share usage (seed 004), usage.",
        [
            timeseries(
                "Short-job penalty A(t) per user",
                "A(t) = 0.9 A(t−1) + 0.1 T_s(t) every 3 minutes (seed 002, short jobs); the flood "
                f"alert fires above {s.alerts.shortjob_flood:g} slot-seconds.",
                target(
                    'SELECT "adjust" FROM "shortjobs" WHERE "kind" = \'user\' AND '
                    f'{USER} AND {where} GROUP BY "holder"',
                    alias="$tag_holder",
                ),
                threshold=s.alerts.shortjob_flood,
                points=True,  # ticks only while A(t) is above the floor: no lines across days
                legend_right=True,
            ),
            timeseries(
                "Short-job penalty A(t) per group",
                "The same penalty per group (seed 002, short jobs).",
                target(
                    'SELECT "adjust" FROM "shortjobs" WHERE "kind" = \'group\' AND '
                    f'{where} GROUP BY "holder"',
                    alias="$tag_holder",
                ),
                threshold=s.alerts.shortjob_flood,
                points=True,  # ticks only while A(t) is above the floor: no lines across days
                legend_right=True,
            ),
            timeseries(
                "N_s and T_s per 3-minute tick (all users)",
                "N_s: jobs under 600 s ended in the tick; T_s: their slots x 600 s, charged as "
                "if each ran 600 s (seed 002, short jobs).",
                target(
                    'SELECT sum("n_short") AS "N_s" FROM "shortjobs" WHERE "kind" = \'user\' '
                    f"AND {USER} AND {where} GROUP BY time($__interval) fill(none)",
                    "A",
                ),
                target(
                    'SELECT sum("penalty_seconds") AS "T_s" FROM "shortjobs" WHERE "kind" = '
                    f"'user' AND {USER} AND {where} GROUP BY time($__interval) fill(none)",
                    "B",
                ),
                bars=True,
                overrides=right_axis("N_s"),  # a count beside slot-seconds
            ),
            timeseries(
                "Slot turnover U",
                "Unusable slots U = (1/T) Σ w_n, slots idle between one job and the next while "
                "a job waited (seed 002 §2), beside the idle slots nobody waited for.",
                target(
                    'SELECT "unusable_slots" AS "U (turnover)", "idle_slots" AS "idle" FROM '
                    f'"turnover" WHERE {where}'
                ),
            ),
            timeseries(
                "Fair-share usage per user (node-hours, 7-day half-life)",
                "Decayed node-hours per user, NODE_FAIL jobs refunded (seed 004, PBS fair share).",
                target(
                    'SELECT "usage_node_hours" FROM "fairshare" WHERE "kind" = \'user\' AND '
                    f'{USER} AND {where} GROUP BY "holder"',
                    alias="$tag_holder",
                ),
                unit=NODE_HOURS,
                legend_right=True,
            ),
            timeseries(
                "Usage per day (Open XDMoD Jobs realm)",
                "CPU, node and wall hours clipped to each day, as Open XDMoD's Jobs realm.",
                target(
                    'SELECT "node_hours" AS "node hours", "cpu_hours" AS "cpu hours", '
                    f'"wall_hours" AS "wall hours" FROM "usage" WHERE {where}'
                ),
                unit=HOURS,
                dots=True,
            ),
        ],
        [
            cluster_variable("shortjobs"),
            query_variable(
                "user",
                "user",
                'SHOW TAG VALUES FROM "shortjobs" WITH KEY = "holder" WHERE "kind" = \'user\'',
            ),
        ],
    )


def samples(s: Settings) -> Dashboard:
    where = f"{CLUSTER} AND $timeFilter"
    return Dashboard(
        "drainwatch-samples",
        "drainwatch: file systems and utilisation",
        "DFS write load and hot zones, per-job core and memory utilisation (seed 003 §5).",
        [
            timeseries(
                "DFS write and read MB/s",
                "Write and read load of the distributed file system per minute, summed over the "
                f"jobs' nodes; hot zone above {s.alerts.hot_zone:g} MB/s (seed 003 §5.2).",
                target(
                    'SELECT "write_mb_s" AS "write", "read_mb_s" AS "read" FROM "dfs" '
                    f"WHERE {where}"
                ),
                unit="MBs",
                threshold=s.alerts.hot_zone,
                width=24,
            ),
            table(
                "Hot-zone episodes and their contributing jobs",
                "Runs of minutes above the threshold: peak, length and the jobs that wrote "
                "most (job:share; seed 003 §5.2).",
                target(
                    'SELECT "peak_mb_s", "minutes", "end_s" * 1000 AS "end", "top_jobs" FROM '
                    f'"hot_zone" WHERE {where}',
                    fmt="table",
                ),
                width=24,
                time="first hot minute",
                units={"peak_mb_s": "MBs", "minutes": "none", "end": "dateTimeAsIso"},
            ),
            histogram(
                "Job core utilisation (mean per job)",
                "Distribution of jobs' mean core utilisation over their samples (seed 003 §5).",
                target(f'SELECT "core_util_mean" FROM "job_util" WHERE {where}', alias="jobs"),
                unit="percentunit",
            ),
            histogram(
                "Job memory use per core (mean / theoretical)",
                "Distribution of jobs' mean memory per core over the theoretical memory per "
                "core (samples.mem_per_core; seed 003 §5).",
                target(f'SELECT "mem_mean_ratio" FROM "job_util" WHERE {where}', alias="jobs"),
            ),
            timeseries(
                "Squashed area (core-hours) per day",
                "Σ core utilisation x time over the jobs first measured that day (seed 003 §5's "
                "squashed area).",
                target(
                    'SELECT sum("sa_core_seconds") / 3600 AS "squashed area" FROM "job_util" '
                    f"WHERE {where} GROUP BY time(1d) fill(none)"
                ),
                unit=CORE_HOURS,
                bars=True,
            ),
            stat(
                "Jobs measured",
                "Jobs with utilisation measures in the range (job_util points).",
                target(f'SELECT count("core_util_mean") FROM "job_util" WHERE {where}'),
            ),
        ],
        [cluster_variable("dfs")],
    )


def capability(s: Settings) -> Dashboard:
    where = f"{CLUSTER} AND $timeFilter"
    return Dashboard(
        "drainwatch-capability",
        "drainwatch: capability use",
        "Capability use CUP40 against its goal and the node-hours behind it (seed 004).",
        [
            timeseries(
                "CUP40 and modified CUP per day vs target",
                "Share of node-hours used by jobs of at least 40 % of the section; modified "
                "CUP without backfill node-hours (seed 004); the target is "
                f"{s.alerts.cup40_target:.0%}.",
                target(
                    'SELECT "cup40" AS "CUP40", "cup40_modified" AS "modified CUP" FROM '
                    f'"capability" WHERE {where}'
                ),
                unit="percentunit",
                threshold=s.alerts.cup40_target,
                dots=True,
            ),
            timeseries(
                "Large, small and backfill node-hours per day",
                "Node-hours of large jobs (≥ 40 % of the section), small jobs and backfilled "
                "jobs (seed 004).",
                target(
                    'SELECT "large_node_hours" AS "large", "small_node_hours" AS "small", '
                    f'"backfill_node_hours" AS "backfill" FROM "capability" WHERE {where}'
                ),
                unit=NODE_HOURS,
                bars=True,
                stacked=True,
            ),
            stat(
                "Latest CUP40",
                "CUP40 of the latest complete day (seed 004); red below the target.",
                target(f'SELECT last("cup40") FROM "capability" WHERE {where}'),
                unit="percentunit",
                threshold=s.alerts.cup40_target,
                below_bad=True,
            ),
            stat(
                "P_CUP day term (0.80 − CUP40 while below the goal)",
                "The day's term of the capability penalty P_CUP (seed 004).",
                target(f'SELECT last("p_cup_factor") FROM "capability" WHERE {where}'),
            ),
        ],
        [cluster_variable("capability")],
    )


def pipeline(s: Settings) -> Dashboard:
    where = f'"worker" =~ /^$worker$/ AND {CLUSTER} AND $timeFilter'
    per = 'GROUP BY time($__interval), "worker" fill(none)'
    last_record = [
        ("node status (drain)", "drain", "drain_node_seconds", "\"window\" = 'minute'"),
        ("job events (usage)", "usage", "node_hours", ""),
        ("node samples (dfs)", "dfs", "write_mb_s", ""),
    ]
    return Dashboard(
        "drainwatch-pipeline",
        "drainwatch: pipeline health",
        "The live worker itself (the pipeline measurement, every 10 s of wall clock).",
        [
            timeseries(
                "Consumer lag (records behind the log end)",
                "Records the workers have not read yet over their partitions; grows when the "
                "worker cannot keep up.",
                target(
                    f'SELECT max("consumer_lag") FROM "pipeline" WHERE {where} {per}',
                    alias="$tag_worker",
                ),
            ),
            timeseries(
                "Records per second",
                "Input records processed per second by each worker.",
                target(
                    f'SELECT mean("records_per_s") FROM "pipeline" WHERE {where} {per}',
                    alias="$tag_worker",
                ),
                unit="rps",
            ),
            timeseries(
                "Dead letters and late records (cumulative)",
                "Records sent to the dead-letter topic (unparseable) and records too late for "
                "their window (worker.lateness).",
                target(
                    f'SELECT max("dead_letters") AS "dead letters", max("late") AS "late" '
                    f'FROM "pipeline" WHERE {where} {per}',
                    alias="$col $tag_worker",
                ),
            ),
            timeseries(
                "Sink latency",
                "Mean seconds per InfluxDB write of each worker's sink since its last pipeline "
                "point, retries included (a write waits, holding its Kafka acks, until it lands).",
                target(
                    f'SELECT max("sink_latency_s") FROM "pipeline" WHERE {where} {per}',
                    alias="$tag_worker",
                ),
                unit="s",
            ),
            timeseries(
                "Sink retries (cumulative)",
                "InfluxDB writes retried by the worker's sink: its latency stays behind this.",
                target(
                    f'SELECT max("sink_retries") FROM "pipeline" WHERE {where} {per}',
                    alias="$tag_worker",
                ),
            ),
            timeseries(
                "Snapshot age",
                "Seconds since each worker's last state snapshot (offsets commit only behind a "
                "snapshot, docs/state.md).",
                target(
                    f'SELECT max("snapshot_age_s") FROM "pipeline" WHERE {where} {per}',
                    alias="$tag_worker",
                ),
                unit="s",
            ),
            table(
                "Last record per input (event time)",
                "The newest point each input stream has produced, over all time: a stream "
                "whose time stops moving has stalled upstream.",
                *[
                    target(
                        f'SELECT last("{f}") AS "{label}" FROM "{m}" WHERE '
                        f"{(c + ' AND ') if c else ''}{CLUSTER}",
                        chr(65 + i),
                        fmt="table",
                    )
                    for i, (label, m, f, c) in enumerate(last_record)
                ],
                # one row per input (its name, its newest point's time), not a frame per input
                transformations=[
                    {"id": "seriesToRows", "options": {}},
                    {
                        "id": "organize",
                        "options": {
                            "excludeByName": {"Value": True},
                            "renameByName": {"Metric": "input"},
                        },
                    },
                ],
                time="last event time",
            ),
        ],
        [
            cluster_variable("pipeline"),
            query_variable(
                "worker", "worker", 'SHOW TAG VALUES FROM "pipeline" WITH KEY = "worker"'
            ),
        ],
        time_from="now-6h",
        refresh="30s",
    )


BUILDERS = {
    "drain": drain,
    "jobs": jobs,
    "shortjobs": shortjobs,
    "samples": samples,
    "capability": capability,
    "pipeline": pipeline,
}


def build_all(s: Settings) -> dict[str, dict[str, Any]]:
    """File name (without .json) -> dashboard JSON."""
    return {name: build(s).to_json() for name, build in BUILDERS.items()}
