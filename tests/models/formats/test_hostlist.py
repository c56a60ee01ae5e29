"""Slurm hostlist expansion / compression: examples, errors, hypothesis against a reference."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.formats.hostlist import HostlistError, compress_hostlist, expand_hostlist


def reference_expand(expr: str) -> list[str]:
    """Obviously-correct (slow) expansion: regex tokenising, then itertools.product."""
    if expr.strip() in ("", "None assigned"):
        return []
    out: list[str] = []
    for part in re.findall(r"(?:[^,\[]|\[[^\]]*\])+", expr):
        tokens = re.split(r"(\[[^\]]*\])", part)
        choices: list[list[str]] = []
        for tok in tokens:
            if tok.startswith("["):
                nums: list[str] = []
                for item in tok[1:-1].split(","):
                    lo, _, hi = item.partition("-")
                    for n in range(int(lo), int(hi or lo) + 1):
                        nums.append(str(n).rjust(len(lo), "0"))
                choices.append(nums)
            else:
                choices.append([tok])
        out.extend("".join(p) for p in itertools.product(*choices))
    return out


@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        (
            "cpn-f13-03-[01-02],cpn-f13-04-[01-02]",
            ["cpn-f13-03-01", "cpn-f13-03-02", "cpn-f13-04-01", "cpn-f13-04-02"],
        ),
        ("cpn-f11-31", ["cpn-f11-31"]),
        ("node[1-3,7]", ["node1", "node2", "node3", "node7"]),
        ("n[8-11]", ["n8", "n9", "n10", "n11"]),
        ("n[08-11]", ["n08", "n09", "n10", "n11"]),
        ("n[001-3]", ["n001", "n002", "n003"]),
        ("n[98-101]", ["n98", "n99", "n100", "n101"]),
        (
            "rack[1-2]-node[01-03]",
            [
                "rack1-node01",
                "rack1-node02",
                "rack1-node03",
                "rack2-node01",
                "rack2-node02",
                "rack2-node03",
            ],
        ),
        ("gpu[1-2]x", ["gpu1x", "gpu2x"]),
        ("a,b[1-2],c", ["a", "b1", "b2", "c"]),
        ("n[3,1]", ["n3", "n1"]),
        ("n[1,1]", ["n1", "n1"]),
        ("None assigned", []),
        ("", []),
        ("  ", []),
    ],
)
def test_expand_examples(expr: str, hosts: list[str]) -> None:
    assert expand_hostlist(expr) == hosts


def test_expand_none() -> None:
    assert expand_hostlist(None) == []


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        ("n[1-3", "unbalanced_bracket"),
        ("n1-3]", "unbalanced_bracket"),
        ("n[[1]]", "nested_bracket"),
        ("n[]", "empty_range"),
        ("n[1,]", "empty_range"),
        ("n[a-b]", "bad_range"),
        ("n[1-]", "bad_range"),
        ("n[-1]", "bad_range"),
        ("n[5-2]", "reversed_range"),
        ("n[0-99999999]", "range_too_large"),
        ("a,,b", "empty_host"),
    ],
)
def test_expand_errors(expr: str, reason: str) -> None:
    with pytest.raises(HostlistError) as ei:
        expand_hostlist(expr)
    assert ei.value.reason == reason
    assert isinstance(ei.value, ValueError)


@pytest.mark.parametrize(
    ("hosts", "expr"),
    [
        (
            ["cpn-f13-03-01", "cpn-f13-03-02", "cpn-f13-04-01", "cpn-f13-04-02"],
            "cpn-f13-03-[01-02],cpn-f13-04-[01-02]",
        ),
        (["n1", "n2", "n3", "n7"], "n[1-3,7]"),
        (["n9", "n10"], "n[9-10]"),
        (["n09", "n10"], "n[09-10]"),
        (["login", "n1"], "login,n1"),
        (["n1"], "n1"),
        ([], ""),
    ],
)
def test_compress_examples(hosts: list[str], expr: str) -> None:
    assert compress_hostlist(hosts) == expr
    assert expand_hostlist(expr) == hosts


def test_compress_rejects_bad_names() -> None:
    with pytest.raises(HostlistError):
        compress_hostlist(["n[1]"])
    with pytest.raises(HostlistError):
        compress_hostlist([""])


_prefix = st.text(alphabet="abcxyz-", min_size=1, max_size=4)
_num = st.integers(min_value=0, max_value=120)
_range = st.tuples(_num, st.integers(min_value=0, max_value=5), st.integers(0, 3)).map(
    lambda t: f"{str(t[0]).rjust(len(str(t[0])) + t[2], '0')}" + (f"-{t[0] + t[1]}" if t[1] else "")
)
_group = st.lists(_range, min_size=1, max_size=3).map(lambda r: "[" + ",".join(r) + "]")
_name = st.lists(st.tuples(_prefix, st.one_of(st.just(""), _group)), min_size=1, max_size=2).map(
    lambda parts: "".join(p + g for p, g in parts)
)
_expr = st.lists(_name, min_size=1, max_size=3).map(",".join)


@given(_expr)
def test_expand_matches_reference(expr: str) -> None:
    assert expand_hostlist(expr) == reference_expand(expr)


@given(_expr)
def test_compress_expand_round_trip(expr: str) -> None:
    hosts = expand_hostlist(expr)
    packed = compress_hostlist(hosts)
    assert expand_hostlist(packed) == hosts
    # compression is canonical: compressing again gives the same text
    assert compress_hostlist(expand_hostlist(packed)) == packed


@given(
    st.lists(
        st.tuples(st.sampled_from(["n", "cpn-f1-", "gpu"]), _num, st.integers(0, 2)), max_size=30
    )
)
def test_host_lists_round_trip(items: list[tuple[str, int, int]]) -> None:
    hosts = [f"{p}{str(n).rjust(len(str(n)) + pad, '0')}" for p, n, pad in items]
    assert expand_hostlist(compress_hostlist(hosts)) == hosts


def test_a_huge_expression_is_refused_with_a_reason_not_expanded() -> None:
    import resource

    from models.formats.hostlist import MAX_HOSTS

    expr = ",".join(f"r{i}[0-65535]" for i in range(200))  # 2.7 KB, 13.1 M names
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(HostlistError) as e:
        expand_hostlist(expr)
    assert e.value.reason == "hostlist_too_large"
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100
    assert len(expand_hostlist(",".join(f"r{i}[0-65535]" for i in range(4)))) == MAX_HOSTS
