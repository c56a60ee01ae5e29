"""The end-of-input control message on node-status."""

from __future__ import annotations

import orjson
import pytest

from models.records.nodestatus import Codebook, NodeStatus, NodeStatusBatch
from streams.codecs import control, nodestatus
from tests.streams.codecs.helpers import refused, validator


def test_round_trip_and_schema() -> None:
    value = control.encode_flush("moab:/var/log/moab.log")
    # the bytes the shipper writes today (streams/ship/moab.py)
    assert value == orjson.dumps({"v": 1, "source": "moab:/var/log/moab.log", "control": "flush"})
    validator("node-status").validate(orjson.loads(value))
    assert control.decode_control(value) == control.Control("moab:/var/log/moab.log", "flush")


def test_a_slice_is_not_a_control_message() -> None:
    book = Codebook()
    b = NodeStatusBatch.from_records([NodeStatus(1, "control", "Idle", (), ('"control"',))], book)
    assert control.decode_control(nodestatus.encode(b, book, "s")) is None
    assert control.decode_control(b"not json") is None
    assert control.decode_control(b'"control"') is None


@pytest.mark.parametrize(
    ("msg", "reason"),
    [
        ({"v": 2, "source": "s", "control": "flush"}, "bad_version"),
        ({"source": "s", "control": "flush"}, "bad_version"),
        ({"v": 1, "source": "s", "control": "stop"}, "bad_message"),
        ({"v": 1, "source": 3, "control": "flush"}, "bad_message"),
        ({"v": 1, "source": "s", "control": "flush", "ts_ms": [1]}, "bad_message"),
    ],
)
def test_refusals(msg: dict[str, object], reason: str) -> None:
    refused(control.decode_control, orjson.dumps(msg), reason, "control message")
