"""The generated Grafana files: the committed ones are exactly what the code writes, every
query is InfluxQL on a documented measurement, and the alert thresholds are the worker's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from models.drain.basis import QUALITY_MIN
from streams.config import AlertsSettings, Settings
from streams.grafana.__main__ import generate, main
from streams.grafana.alerting import rules_file

REPO = Path(__file__).resolve().parents[2]
MEASUREMENTS = {
    "drain",
    "node_states",
    "drain_job",
    "drain_size_group",
    "job",
    "usage",
    "shortjobs",
    "turnover",
    "runtime_prediction",
    "capability",
    "fairshare",
    "dfs",
    "hot_zone",
    "job_util",
    "alerts",
    "pipeline",
    "release_forecast",
}


def test_committed_files_equal_the_generated_ones(tmp_path: Path) -> None:
    for rel, text in generate(Settings()).items():
        assert (REPO / "grafana" / rel).read_text() == text, (
            f"grafana/{rel} differs from the code: run `python -m streams.grafana`"
        )
    assert main(["--check"]) == 0
    assert main(["--out", str(tmp_path), "--check"]) == 1  # nothing there yet
    assert main(["--out", str(tmp_path)]) == 0 and main(["--out", str(tmp_path), "--check"]) == 0


def _dashboards() -> dict[str, dict]:
    import json

    return {p.stem: json.loads(p.read_text()) for p in (REPO / "grafana/dashboards").glob("*.json")}


def test_six_dashboards_every_panel_influxql_with_a_description() -> None:
    boards = _dashboards()
    assert sorted(boards) == ["capability", "drain", "jobs", "pipeline", "samples", "shortjobs"]
    assert len({b["uid"] for b in boards.values()}) == 6
    for name, b in boards.items():
        assert b["schemaVersion"] == 38
        assert [v["name"] for v in b["templating"]["list"]][0] == "cluster"
        ids = [p["id"] for p in b["panels"]]
        assert len(ids) == len(set(ids))
        for p in b["panels"]:
            assert p["description"] and p["fieldConfig"]["defaults"]["unit"], (name, p["title"])
            for t in p["targets"]:
                assert t["rawQuery"] and t["datasource"]["uid"] == "drainwatch-influxdb"
                q = t["query"]
                assert q.startswith("SELECT ") and "from(bucket" not in q  # InfluxQL, not Flux
                used = set(re.findall(r'FROM "(\w+)"', q))
                assert used and used <= MEASUREMENTS, (name, p["title"], used)
                assert '"cluster" =~ /^$cluster$/' in q, (name, p["title"])


def test_alert_rules_use_the_workers_thresholds() -> None:
    s = Settings(
        alerts=AlertsSettings(
            hot_zone=50.0,
            shortjob_flood=10.0,
            cup40_target=0.5,
            sliding_node_hours=7.0,
            ftl_node_hours=3.0,
            hot_zone_minutes=9,
            stalled_after=120.0,
        )
    )
    rules = {r["labels"]["drainwatch_kind"]: r for g in rules_file(s)["groups"] for r in g["rules"]}
    assert sorted(rules) == [
        "capability",
        "data_quality",
        "failure_to_launch",
        "hot_zone",
        "overrun",
        "shortjob_flood",
        "sliding_job",
        "stalled",
    ]

    def threshold(kind: str) -> float:
        return rules[kind]["data"][2]["model"]["conditions"][0]["evaluator"]["params"][0]

    assert (
        threshold("hot_zone") == 50.0
        and "LIMIT 9" in rules["hot_zone"]["data"][0]["model"]["query"]
    )
    assert threshold("shortjob_flood") == 10.0
    assert threshold("capability") == 0.5
    assert threshold("sliding_job") == 7.0
    assert threshold("failure_to_launch") == 3.0
    assert threshold("data_quality") == QUALITY_MIN
    assert rules["stalled"]["data"][0]["relativeTimeRange"]["from"] == 120
    assert rules["stalled"]["noDataState"] == "Alerting"
    for r in rules.values():
        assert r["annotations"]["runbook"] and r["annotations"]["summary"]
        assert r["labels"]["severity"] in ("critical", "warning", "info")


def test_every_rule_links_to_the_panel_behind_it() -> None:
    """A notification's dashboardURL/panelURL come from the rule's __dashboardUid__ and
    __panelId__: each names a committed dashboard and one of its panels, the one PANELS says."""
    from streams.grafana.alerting import PANELS

    boards = {
        b["uid"]: b
        for b in (json.loads(p.read_text()) for p in (REPO / "grafana/dashboards").glob("*.json"))
    }
    doc = yaml.safe_load((REPO / "grafana/provisioning/alerting/rules.yaml").read_text())
    rules = [r for g in doc["groups"] for r in g["rules"]]
    assert len(rules) == len(PANELS) == 8
    for r in rules:
        a = r["annotations"]
        board = boards[a["__dashboardUid__"]]
        panel = next(p for p in board["panels"] if str(p["id"]) == a["__panelId__"])
        assert panel["title"] == PANELS[r["labels"]["drainwatch_kind"]][1], r["title"]


def test_provisioning_files_carry_no_secret() -> None:
    prov = REPO / "grafana" / "provisioning"
    cp = yaml.safe_load((prov / "alerting" / "contact-points.yaml").read_text())
    url = cp["contactPoints"][0]["receivers"][0]["settings"]["url"]
    assert url == "${DRAINWATCH_GRAFANA_WEBHOOK_URL}"
    for path in prov.rglob("*.yaml"):
        for line in path.read_text().lower().splitlines():
            if line.lstrip().startswith("#"):
                continue
            assert "password" not in line, (path, line)
            assert "token" not in line or "token $__file{" in line, (path, line)


def test_provisioning_files_match_their_json_schemas() -> None:
    """Every provisioning file against the JSON Schema written from Grafana's documentation."""
    import json

    import jsonschema

    prov, schemas = REPO / "grafana" / "provisioning", REPO / "grafana" / "schemas"
    kinds = {"datasources": "datasources", "dashboards": "dashboards", "alerting": "alerting"}
    seen = 0
    for sub, kind in kinds.items():
        schema = json.loads((schemas / f"{kind}.schema.json").read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        for path in sorted((prov / sub).glob("*.yaml")):
            jsonschema.validate(
                yaml.safe_load(path.read_text()), schema, cls=jsonschema.Draft202012Validator
            )
            seen += 1
    assert seen == 5
    schema = json.loads((schemas / "alerting.schema.json").read_text())
    bad = rules_file(Settings())
    bad["groups"][0]["interval"] = "every minute"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema, cls=jsonschema.Draft202012Validator)
