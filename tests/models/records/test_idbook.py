"""IdBook and IntIndex against the plain Interner / a dict (the obviously-correct references)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import models.records.idbook as idbook
from models.records.idbook import IdBook, IntIndex, numeric_id
from models.records.nodestatus import Interner

# numeric ids, near-numeric ones that must stay strings, and others
IDS = st.one_of(
    st.integers(0, 10**18 - 1).map(str),
    st.integers(0, 40).map(str),
    st.sampled_from(["007", "0", "1292428.bw", "42_7", "res.x", "１２", "²", "-5", " 7", ""]),
    st.text(max_size=6),
)


def test_numeric_ids_are_canonical_decimals() -> None:
    assert numeric_id("1292428") == 1292428 and numeric_id("0") == 0
    assert numeric_id("9" * 18) == 10**18 - 1
    for s in ("007", "9" * 19, "1292428.bw", "-5", "１２", "²", "", " 7", "4e3"):
        assert numeric_id(s) == -1, s


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("code"), st.lists(IDS, max_size=30)),
            st.tuples(st.just("codes"), st.lists(IDS, max_size=30)),
            st.tuples(st.just("truncate"), st.integers(0, 60)),
            st.tuples(st.just("compact"), st.integers(0, 2**32)),
            st.tuples(st.just("restore"), st.just(0)),
        ),
        max_size=25,
    )
)
def test_idbook_codes_like_the_interner(ops: list[tuple[str, object]]) -> None:
    saved, idbook._MIN_MERGE = idbook._MIN_MERGE, 3  # merge often: both lookups get exercised
    try:
        _check_ops(ops)
    finally:
        idbook._MIN_MERGE = saved


def _check_ops(ops: list[tuple[str, object]]) -> None:
    ref, book = Interner(), IdBook()
    for op, arg in ops:
        if op == "code":
            assert [book.code(n) for n in arg] == [ref.code(n) for n in arg]  # type: ignore[attr-defined]
        elif op == "codes":
            assert book.codes(arg).tolist() == [ref.code(n) for n in arg]  # type: ignore[arg-type]
        elif op == "truncate":
            ref.truncate(int(arg))  # type: ignore[call-overload]
            book.truncate(int(arg))  # type: ignore[call-overload]
        elif op == "compact":
            keep = np.random.default_rng(int(arg)).random(len(ref)) < 0.5  # type: ignore[call-overload]
            ref.compact(keep)
            book.compact(keep)
        else:
            book = IdBook.from_arrays(*book.to_arrays())
        assert len(book) == len(ref)
        assert book.all_names() == ref.names
        if len(ref):
            assert book.name(len(ref) - 1) == ref.names[-1]


def test_idbook_merges_into_its_arrays(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(idbook, "_MIN_MERGE", 4)
    ref, book = Interner(), IdBook()
    names = [str(x) for x in np.random.default_rng(0).integers(0, 500, 2000).tolist()] + ["a"]
    for n in names:
        assert book.code(n) == ref.code(n)
    assert book._keys.size > 100  # most numeric ids live in the sorted arrays
    assert book.codes(names).tolist() == [ref.code(n) for n in names]
    ids, strs = book.to_arrays()
    assert ids.dtype == np.int64 and strs == {ref.code("a"): "a"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(-(2**40), 2**40), max_size=40), max_size=20))
def test_intindex_like_a_dict(batches: list[list[int]]) -> None:
    ref: dict[int, int] = {}
    ix = IntIndex()
    for b in batches:
        keys = np.array(b, dtype=np.int64)
        expect_new = [k not in ref for k in b]  # absent before this batch
        for k in b:
            ref.setdefault(k, len(ref))
        codes, new = ix.add(keys)
        assert codes.tolist() == [ref[k] for k in b]
        assert new.tolist() == expect_new
        assert len(ix) == len(ref)
        assert ix.keys_by_code().tolist() == list(ref)
    probe = np.array(list(ref) + [2**41], dtype=np.int64)
    assert ix.find(probe).tolist() == [*ref.values(), -1]
    again = IntIndex.of(ix.keys_by_code())
    assert again.find(probe).tolist() == [*ref.values(), -1]
