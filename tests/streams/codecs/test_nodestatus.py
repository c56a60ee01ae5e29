"""Node-status slices: any batch comes back as the same records, fits its schema, and damage
is refused with a reason (tests/streams/test_wire.py has the real log and the reasons of each
field's damage)."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from models.records.nodestatus import Codebook, NodeStatus, NodeStatusBatch
from streams.codecs import nodestatus as ns
from tests.streams.codecs.helpers import refused, validator

_names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)
_records = st.lists(
    st.builds(
        NodeStatus,
        st.integers(-(2**62), 2**62),
        _names,
        st.sampled_from(["Idle", "Busy", "Running", "Drained", "Down", "Maint"]),
        st.lists(_names, max_size=2).map(tuple),
        st.lists(_names, max_size=3).map(tuple),
    ),
    max_size=40,
)


def _as_records(b: NodeStatusBatch, book: Codebook) -> list[tuple[object, ...]]:
    out = []
    for i in range(len(b)):
        jobs = tuple(book.jobs.names[j] for j in b.run_job[b.run_row == i].tolist())
        rsv = book.jobs.names[b.rsv[i]] if b.rsv[i] >= 0 else None
        node, state = book.nodes.names[b.node[i]], book.states.names[b.state[i]]
        out.append((int(b.ts_ms[i]), node, state, rsv, jobs, bool(b.has_job[i])))
    return out


@settings(max_examples=60, deadline=None)
@given(_records)
def test_any_batch_round_trips_and_fits_its_schema(records: list[NodeStatus]) -> None:
    book = Codebook()
    batch = NodeStatusBatch.from_records(records, book)
    value = ns.encode(batch, book, "moab:test")
    validator("node-status").validate(orjson.loads(value))
    assert orjson.loads(value)["v"] == ns.VERSION == 1
    wbook = Codebook()
    source, got, bad = ns.Decoder(wbook).decode(value)
    assert source == "moab:test" and bad == []
    assert _as_records(got, wbook) == _as_records(batch, book)


GOOD = {
    "v": 1,
    "source": "s",
    "ts_ms": [1, 2],
    "nodes": ["a", "b"],
    "node": [0, 1],
    "states": ["Idle"],
    "state": [0, 0],
    "jobs": ["j"],
    "rsv": [0, -1],
    "run_row": [1],
    "run_job": [0],
}


def test_refusals_name_their_reason() -> None:
    dec = ns.Decoder(Codebook()).decode
    refused(dec, orjson.dumps({**GOOD, "v": 2}), "bad_version", "v=2")
    refused(dec, orjson.dumps({k: v for k, v in GOOD.items() if k != "v"}), "bad_version")
    refused(dec, b"{not json", "bad_json")
    refused(dec, b"[]", "bad_message")
    refused(dec, orjson.dumps({**GOOD, "node": [0, 5]}), "bad_message", "node")
