"""Alert messages: any alert round-trips, fits the alerts schema; damage is refused."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from models.alerts import Alert
from streams.codecs.alerts import AlertMessage, alert_message, decode_alert, encode_alert
from streams.topics import ALERTS_SCHEMA
from tests.streams.codecs.helpers import refused, validator

_kinds = ALERTS_SCHEMA["properties"]["kind"]["enum"]
_time = st.floats(0, 4e9)
_value = st.none() | st.floats(-1e15, 1e15)
_details = st.dictionaries(st.text(max_size=6), st.one_of(st.text(max_size=6), st.integers(0, 99)))
_alerts = st.builds(
    Alert,
    st.text(max_size=20),
    st.sampled_from(_kinds),
    st.text(max_size=20),
    st.sampled_from(["info", "warning", "critical"]),
    st.sampled_from(["firing", "resolved"]),
    _value,
    _value,
    st.text(max_size=8),
    _time,
    _time,
    _details,
)


@settings(max_examples=100, deadline=None)
@given(_alerts, st.text(max_size=8))
def test_any_alert_round_trips_and_fits_its_schema(a: Alert, cluster: str) -> None:
    value = encode_alert(cluster, a)
    doc = orjson.loads(value)
    validator("alerts").validate(doc)
    assert value == orjson.dumps(alert_message(cluster, a))
    assert decode_alert(value) == AlertMessage(cluster, a)


def test_refusals() -> None:
    a = Alert("overrun:1", "overrun", "1", "warning", "firing", 2.0, 1.0, "run", 10.0, 20.0)
    good = alert_message("c", a)
    refused(decode_alert, b"", "bad_json")
    refused(decode_alert, orjson.dumps({**good, "v": 2}), "bad_version", "v=2")
    refused(decode_alert, orjson.dumps({**good, "kind": "nope"}), "bad_message", "kind")
    refused(decode_alert, orjson.dumps({**good, "since": "10"}), "bad_message", "since")
    no_id = {k: v for k, v in good.items() if k != "id"}
    refused(decode_alert, orjson.dumps(no_id), "bad_message", "missing id")
