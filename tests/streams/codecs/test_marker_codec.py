"""The shipper markers' codec (streams.codecs.control, issue 30) and their jobs-partials entry:
round trips, a prefix compare tells them from data, version 1's flush still reads, bad markers
are refused with a reason."""

from __future__ import annotations

import orjson
import pytest

from models.records.jobevent import JobEvent, jobevent_row
from streams.codecs import control
from streams.codecs.base import CodecError
from streams.codecs.partials import decode_job_partial, encode_job_partial, job_marker_entry


def test_a_marker_round_trips_and_is_told_from_data_by_its_prefix() -> None:
    v = control.encode_marker("jobs:h:1", control.WATERMARK, 1.5, 100.0)
    assert control.is_marker(v)
    assert control.decode_marker(v) == control.Marker("jobs:h:1", "watermark", 1.5, 100.0)
    end = control.decode_marker(control.encode_marker("s", control.END, None, 2.0))
    assert end is not None and end.end and end.ts is None
    line = JobEvent("end", 1.0, "control").to_json()  # a job event never starts so
    assert not control.is_marker(line) and control.decode_marker(line) is None
    assert control.decode_control(v) == control.decode_marker(v)  # node-status reads both
    flush = control.decode_control(control.encode_flush("moab:f"))
    assert flush == control.Marker("moab:f", "flush") and flush.end


@pytest.mark.parametrize(
    ("msg", "reason"),
    [
        ({"control": "watermark", "v": 3, "source": "s", "ts": 1, "sent": 1}, "bad_version"),
        ({"control": "stop", "v": 2, "source": "s", "ts": 1, "sent": 1}, "bad_message"),
        ({"control": "end", "v": 2, "source": "", "ts": 1, "sent": 1}, "bad_message"),
        ({"control": "end", "v": 2, "source": "s", "ts": "1", "sent": 1}, "bad_message"),
        ({"control": "end", "v": 2, "source": "s", "ts": 1, "sent": None}, "bad_message"),
        ({"control": "end", "v": 2, "source": "s", "ts": 1, "sent": 1, "x": 0}, "bad_message"),
    ],
)
def test_bad_markers_are_refused(msg: dict[str, object], reason: str) -> None:
    with pytest.raises(CodecError) as e:
        control.decode_marker(orjson.dumps(msg))
    assert e.value.reason == reason
    with pytest.raises(ValueError):
        control.encode_marker("s", control.FLUSH, 1.0, 1.0)


def test_a_marker_entry_keeps_its_place_among_job_partials() -> None:
    row = orjson.dumps(jobevent_row(JobEvent("end", 5.0, "j").to_dict()))
    m = control.Marker("jobs:h:1", "end", 5.0, 9.0)
    got = decode_job_partial(encode_job_partial(3, [[7, [row]], [8, job_marker_entry(m)]]))
    assert got.partition == 3 and [off for off, _ in got.events] == [7]
    assert got.markers == [(8, m)]
