"""The local InfluxDB: influxdb-client writes through /api/v2/write, InfluxQL reads back."""

from __future__ import annotations

import base64
import urllib.error
import urllib.parse
import urllib.request

import pytest
from influxdb_client import InfluxDBClient, Point, WritePrecision
from influxdb_client.client.exceptions import InfluxDBError
from influxdb_client.client.write_api import SYNCHRONOUS

T0 = 1_700_000_000_123_456_789  # ns; the digits below the microsecond must survive


def _write(influx, records) -> None:
    with InfluxDBClient(url=influx.url, token=influx.token, org=influx.org) as client:
        client.write_api(write_options=SYNCHRONOUS).write(
            bucket=influx.bucket, org=influx.org, record=records, write_precision=WritePrecision.NS
        )


def _point(partition: str, t: int, idle: float, nodes: int, reason: str) -> Point:
    return (
        Point("drain")
        .tag("cluster", "c1")
        .tag("partition", partition)
        .field("idle_node_seconds", idle)
        .field("nodes", nodes)
        .field("reason", reason)
        .time(t, WritePrecision.NS)
    )


def test_v2_write_then_influxql_reads_the_same_values(influx):
    written = [
        ("batch", T0, 0.1, 2**53 + 1, "waiting for 512-node job"),
        ("batch", T0 + 1, 1234.5678, 0, 'quote " and comma, and space'),
        ("gpu", T0 + 7, -3.25e-7, -42, "ümlaut"),
    ]
    _write(influx, [_point(*row) for row in written])

    rows = influx.influxql('SELECT * FROM "drain" GROUP BY * ORDER BY time')
    got = sorted(
        (r["partition"], r["time"], r["idle_node_seconds"], r["nodes"], r["reason"]) for r in rows
    )
    assert got == sorted(written)
    for row in rows:  # float stays float, int stays int (an 'i' field), string stays string
        assert type(row["idle_node_seconds"]) is float
        assert type(row["nodes"]) is int
        assert type(row["reason"]) is str
        assert row["cluster"] == "c1"


def test_same_series_and_time_overwrites_field_by_field(influx):
    _write(influx, _point("batch", T0, 1.5, 10, "first"))
    _write(influx, _point("batch", T0, 1.5, 10, "first"))  # a replayed write: no duplicate
    assert influx.influxql('SELECT count("nodes") FROM "drain"')[0]["count"] == 1

    # Same measurement + tag set + timestamp: the new field values replace the old ones...
    _write(influx, _point("batch", T0, 2.5, 11, "second"))
    # ...field by field: a point carrying only some fields leaves the others as they were.
    _write(
        influx,
        Point("drain")
        .tag("cluster", "c1")
        .tag("partition", "batch")
        .field("idle_node_seconds", 9.75)
        .time(T0, WritePrecision.NS),
    )

    rows = influx.influxql('SELECT * FROM "drain"')
    assert len(rows) == 1
    assert rows[0]["time"] == T0
    assert (rows[0]["idle_node_seconds"], rows[0]["nodes"], rows[0]["reason"]) == (
        9.75,
        11,
        "second",
    )


def test_flux_over_api_v2_query_reads_the_same_points(influx):
    _write(influx, [_point("batch", T0, 0.5, 3, "a"), _point("gpu", T0 + 5, 1.5, 4, "b")])
    flux = (
        f'from(bucket: "{influx.bucket}") |> range(start: 0)'
        ' |> filter(fn: (r) => r._measurement == "drain" and r._field == "nodes")'
    )
    with InfluxDBClient(url=influx.url, token=influx.token, org=influx.org) as client:
        tables = client.query_api().query(flux, org=influx.org)
    got = sorted((r["partition"], r.get_value()) for t in tables for r in t.records)
    assert got == [("batch", 3), ("gpu", 4)]


def _status(url: str, data: bytes | None = None, auth: str | None = None) -> int:
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    if auth is not None:
        req.add_header("Authorization", auth)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_auth_is_on(influx):
    q = urllib.parse.urlencode({"q": "SHOW DATABASES"})
    assert _status(f"{influx.url}/query?{q}") == 401
    basic = "Basic " + base64.b64encode(influx.token.encode()).decode()
    assert _status(f"{influx.url}/query?{q}", auth=basic) == 200

    write = f"{influx.url}/api/v2/write?" + urllib.parse.urlencode(
        {"bucket": influx.bucket, "org": "-", "precision": "ns"}
    )
    line = f"drain,cluster=c1 nodes=1i {T0}".encode()
    assert _status(write, data=line) == 401
    user = influx.token.split(":", 1)[0]
    assert _status(write, data=line, auth=f"Token {user}:wrong-password") == 401
    assert _status(write, data=line, auth=f"Token {influx.token}") == 204
    assert influx.influxql('SELECT "nodes" FROM "drain"') == [{"time": T0, "nodes": 1}]

    with InfluxDBClient(url=influx.url, token=f"{user}:wrong", org="-") as client:
        with pytest.raises(InfluxDBError) as err:
            client.write_api(write_options=SYNCHRONOUS).write(
                bucket=influx.bucket, record=_point("batch", T0, 1.0, 1, "x")
            )
    assert err.value.response.status == 401


def test_no_secret_in_the_stack_logs_and_logs_are_private(stack):
    """The admin password never reaches a log file, and log files are readable by their owner
    only (the HTTP access log would print the bootstrap's CREATE USER ... WITH PASSWORD)."""
    import stat

    password = stack.influx_token.split(":", 1)[1]
    logs = stack.config.logs
    files = [p for p in logs.iterdir() if p.is_file()]
    assert files
    for p in files:
        assert password not in p.read_text(errors="replace"), p
        assert stat.S_IMODE(p.stat().st_mode) & 0o077 == 0, f"{p} is readable by others"
    assert stat.S_IMODE(logs.stat().st_mode) & 0o077 == 0
