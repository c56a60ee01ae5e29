"""Grafana alert rules, the on-call contact point and its notification policy, in Grafana's
file-provisioning format (``apiVersion: 1``; rules as ``groups: [{orgId, name, folder,
interval, rules}]``), one rule per kind of the worker's own alerts (``models/alerts.py``).

Thresholds come from the same settings the worker uses (``alerts.*`` in ``streams/config/``;
``quality_min`` from ``models/drain/basis.py``), so Grafana and the alerts topic agree. Each rule
is an InfluxQL query (A), reduced to one number per series (B) and compared (C). The contact
point's URL is read from ``DRAINWATCH_GRAFANA_WEBHOOK_URL`` when Grafana starts: no secret
is in the repo.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from models.drain.basis import QUALITY_MIN
from streams.config import Settings

DATASOURCE_UID = "drainwatch-influxdb"
FOLDER = "drainwatch"
CONTACT_POINT = "drainwatch on-call"
WEBHOOK_URL_ENV = "DRAINWATCH_GRAFANA_WEBHOOK_URL"


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str  # the worker's alert kind (label drainwatch_kind)
    title: str
    query: str  # InfluxQL with $timeFilter
    range_s: int  # how far back the query looks
    reducer: str  # last / max / min
    op: str  # gt / lt
    threshold: float
    severity: str
    summary: str
    runbook: str
    no_data: str = "OK"  # the state when the query returns nothing
    for_: str = "0s"

    def to_yaml(self, panel: tuple[str, int] | None = None) -> dict[str, Any]:
        """The rule as provisioned; ``panel`` = (dashboard uid, panel id) the notification links
        to (its dashboardURL and panelURL)."""
        links = (
            {} if panel is None else {"__dashboardUid__": panel[0], "__panelId__": str(panel[1])}
        )
        return {
            "uid": f"drainwatch-{self.kind.replace('_', '-')}",
            "title": self.title,
            "condition": "C",
            "data": [
                {
                    "refId": "A",
                    "relativeTimeRange": {"from": self.range_s, "to": 0},
                    "datasourceUid": DATASOURCE_UID,
                    "model": {
                        "refId": "A",
                        "query": self.query,
                        "rawQuery": True,
                        "resultFormat": "time_series",
                        "intervalMs": 60000,
                        "maxDataPoints": 43200,
                    },
                },
                {
                    "refId": "B",
                    "relativeTimeRange": {"from": 0, "to": 0},
                    "datasourceUid": "__expr__",
                    "model": {
                        "refId": "B",
                        "type": "reduce",
                        "expression": "A",
                        "reducer": self.reducer,
                        "settings": {"mode": "dropNN"},
                    },
                },
                {
                    "refId": "C",
                    "relativeTimeRange": {"from": 0, "to": 0},
                    "datasourceUid": "__expr__",
                    "model": {
                        "refId": "C",
                        "type": "threshold",
                        "expression": "B",
                        "conditions": [
                            {"evaluator": {"type": self.op, "params": [self.threshold]}}
                        ],
                    },
                },
            ],
            "noDataState": self.no_data,
            "execErrState": "Error",
            "for": self.for_,
            "annotations": {
                "summary": self.summary,
                "runbook": self.runbook,
                **links,
            },
            "labels": {"drainwatch_kind": self.kind, "severity": self.severity},
            "isPaused": False,
        }


def rules(s: Settings) -> list[tuple[str, list[Rule]]]:
    """(group, rules): the drain group, the job group, the samples group, the pipeline group."""
    hz_n = s.alerts.hot_zone_minutes
    # B has no value on a series the query left empty (Grafana expands the annotations for
    # every series, firing or not): "no value" then, not a template error in the log
    val = "{{ if $values.B.Value }}{{ humanize $values.B.Value }}{{ else }}no value{{ end }}"
    return [
        (
            "drain",
            [
                Rule(
                    "sliding_job",
                    "Sliding job",
                    'SELECT "drain_node_seconds" / 3600 FROM "drain_job" WHERE '
                    '"nodes_running" = 0 AND $timeFilter GROUP BY "cluster"',
                    2 * 86400,
                    "max",
                    "gt",
                    s.alerts.sliding_node_hours,
                    "critical",
                    f"A job never seen running has held {val} node-hours idle "
                    f"(alerts.sliding_node_hours = {s.alerts.sliding_node_hours:g}); the jobs "
                    "dashboard's sliding-jobs table names it.",
                    "Seed 000 §V-A.2: the scheduler keeps reserving nodes for a job whose start "
                    "slides into the future. Check the job's reservation (showres, scontrol show "
                    "job); lower its priority, hold it or fix its request, so the nodes go back "
                    "to backfill.",
                ),
                Rule(
                    "failure_to_launch",
                    "Failure to launch",
                    'SELECT "drain_node_seconds" / 3600 FROM "job" WHERE "runtime" < 30 AND '
                    '$timeFilter GROUP BY "cluster"',
                    86400,
                    "max",
                    "gt",
                    s.alerts.ftl_node_hours,
                    "warning",
                    f"A job drained {val} node-hours, then ran for under 30 s "
                    f"(alerts.ftl_node_hours = {s.alerts.ftl_node_hours:g}).",
                    "Seed 000 §V-C: a big job held nodes idle and died at launch. See the jobs "
                    "dashboard's failure-to-launch table, contact the user, check the nodes it "
                    "landed on (prolog failures, bad nodes) before it is resubmitted.",
                ),
                Rule(
                    "data_quality",
                    "Drain data quality",
                    'SELECT last("basis_seconds_per_node") / last("length_seconds") FROM "drain" '
                    'WHERE "window" = \'hour\' AND "provisional" = false AND $timeFilter '
                    'GROUP BY "cluster"',
                    3 * 3600,
                    "last",
                    "lt",
                    QUALITY_MIN,
                    "warning",
                    f"The last closed hour's basis is {val} of its length (below "
                    f"{QUALITY_MIN:g}): its drain percentages are not reliable.",
                    "Seed 000 §III-B.3: nodes reported for less of the hour than they should. "
                    "Check that the Moab log shipper runs and the log is not truncated or "
                    "rotated away; gaps above accounting.max_gap count as unaccounted.",
                ),
            ],
        ),
        (
            "jobs",
            [
                Rule(
                    "shortjob_flood",
                    "Short-job flood",
                    'SELECT last("adjust") FROM "shortjobs" WHERE $timeFilter GROUP BY "cluster", '
                    '"kind", "holder"',
                    15 * 60,
                    "last",
                    "gt",
                    s.alerts.shortjob_flood,
                    "warning",
                    f"{{{{ $labels.kind }}}} {{{{ $labels.holder }}}}: short-job penalty A(t) = "
                    f"{val} slot-seconds (alerts.shortjob_flood = {s.alerts.shortjob_flood:g}).",
                    "Seed 002: a flood of jobs under 600 s wastes slot turnover. The fair-share "
                    "hook already lowers the holder's priority; contact the user about bundling "
                    "the jobs (job arrays, one longer job).",
                ),
                Rule(
                    "overrun",
                    "Job running past its prediction",
                    'SELECT last("firing") FROM "alerts" WHERE "kind" = \'overrun\' AND '
                    '$timeFilter GROUP BY "cluster", "subject"',
                    86400,
                    "last",
                    "gt",
                    0.0,
                    "warning",
                    f"Job {{{{ $labels.subject }}}} runs past its upper run-time estimate by more "
                    f"than {s.alerts.overrun_margin:g} s.",
                    "Seed 001: the job runs longer than its (user, job name) history predicts; "
                    "jobs waiting for its nodes will start late. Check the job (hung, larger "
                    "input) and the reservations behind it.",
                ),
                Rule(
                    "capability",
                    "CUP40 below target",
                    'SELECT last("cup40") FROM "capability" WHERE $timeFilter GROUP BY "cluster"',
                    3 * 86400,
                    "last",
                    "lt",
                    s.alerts.cup40_target,
                    "info",
                    f"CUP40 of the last complete day is {val} (target {s.alerts.cup40_target:g}).",
                    "Seed 004: large jobs got less of the machine than the capability goal. "
                    "Review the queue for large jobs held back, and the P_CUP term on the "
                    "capability dashboard.",
                ),
            ],
        ),
        (
            "samples",
            [
                Rule(
                    "hot_zone",
                    "DFS hot zone",
                    'SELECT min("write_mb_s") FROM (SELECT "write_mb_s" FROM "dfs" WHERE '
                    f'$timeFilter GROUP BY "cluster" ORDER BY time DESC LIMIT {hz_n}) '
                    'GROUP BY "cluster" ORDER BY time DESC',
                    30 * 60,
                    "last",
                    "gt",
                    s.alerts.hot_zone,
                    "warning",
                    f"DFS write load above {s.alerts.hot_zone:g} MB/s for the last {hz_n} "
                    f"minutes (lowest {val} MB/s).",
                    "Seed 003 §5.2: the file system is in its hot zone; every writer slows "
                    "down. See the hot-zone table for the jobs writing most and throttle or "
                    "contact them.",
                ),
            ],
        ),
        (
            "pipeline",
            [
                Rule(
                    "stalled",
                    "Pipeline stalled",
                    'SELECT count("records") FROM "pipeline" WHERE $timeFilter GROUP BY "cluster"',
                    round(s.alerts.stalled_after),
                    "last",
                    "lt",
                    1.0,
                    "critical",
                    f"No worker has reported for {s.alerts.stalled_after:g} s.",
                    "The drainwatch worker writes the pipeline measurement every 10 s. Check "
                    "that it runs (its /health/ on worker.web_port), that it reaches Kafka "
                    "and InfluxDB, and its log.",
                    no_data="Alerting",
                ),
            ],
        ),
    ]


# the panel on-call opens from each rule's notification: (dashboard, panel title)
PANELS: dict[str, tuple[str, str]] = {
    "sliding_job": ("jobs", "Perpetually sliding jobs (never seen running)"),
    "failure_to_launch": ("jobs", "Failure to launch (drained, then ran < 30 s)"),
    "data_quality": ("drain", "Basis quality band (mean seconds per node / window length)"),
    "shortjob_flood": ("shortjobs", "Short-job penalty A(t) per user"),
    "overrun": ("jobs", "Running jobs past their prediction (seed 001's red rows)"),
    "capability": ("capability", "CUP40 and modified CUP per day vs target"),
    "hot_zone": ("samples", "DFS write and read MB/s"),
    "stalled": ("pipeline", "Records per second"),
}


def rule_panels(s: Settings) -> dict[str, tuple[str, int]]:
    """Rule kind -> (dashboard uid, panel id) of :data:`PANELS`, from the generated dashboards."""
    from streams.grafana.dashboards import build_all

    boards = build_all(s)
    out = {}
    for kind, (board, title) in PANELS.items():
        b = boards[board]
        pid = next(p["id"] for p in b["panels"] if p["title"] == title)
        out[kind] = (b["uid"], pid)
    return out


def rules_file(s: Settings, interval: str = "1m") -> dict[str, Any]:
    panels = rule_panels(s)
    return {
        "apiVersion": 1,
        "groups": [
            {
                "orgId": 1,
                "name": f"drainwatch-{name}",
                "folder": FOLDER,
                "interval": interval,
                "rules": [r.to_yaml(panels[r.kind]) for r in group],
            }
            for name, group in rules(s)
        ],
    }


def contact_points_file() -> dict[str, Any]:
    return {
        "apiVersion": 1,
        "contactPoints": [
            {
                "orgId": 1,
                "name": CONTACT_POINT,
                "receivers": [
                    {
                        "uid": "drainwatch-oncall-webhook",
                        "type": "webhook",
                        "settings": {"url": f"${{{WEBHOOK_URL_ENV}}}", "httpMethod": "POST"},
                        "disableResolveMessage": False,
                    }
                ],
            }
        ],
    }


def policies_file(group_wait: str = "30s", group_interval: str = "5m") -> dict[str, Any]:
    """The org's notification policy tree: every drainwatch alert to on-call, one
    notification group per rule and cluster; critical ones repeated hourly."""
    return {
        "apiVersion": 1,
        "policies": [
            {
                "orgId": 1,
                "receiver": CONTACT_POINT,
                "group_by": ["grafana_folder", "alertname", "cluster"],
                "group_wait": group_wait,
                "group_interval": group_interval,
                "repeat_interval": "4h",
                "routes": [
                    {
                        "receiver": CONTACT_POINT,
                        "object_matchers": [["severity", "=", "critical"]],
                        "repeat_interval": "1h",
                    }
                ],
            }
        ],
    }
