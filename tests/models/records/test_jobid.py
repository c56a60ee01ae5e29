"""models/records/jobid.py: one normalisation of job ids for every format, and the key of a job
of a named cluster (issue 31, class 5)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.records.jobid import JobIdError, job_key, normalise_job_id


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (123, "123"),
        ("123", "123"),
        (123.0, "123"),
        (" 123", "123"),
        ("123\t\n", "123"),
        (0, "0"),
        (2**63 - 1, "9223372036854775807"),
        (1e15, "1000000000000000"),
        # Slurm's array, heterogeneous-job and step ids are text, kept as written
        ("123_4", "123_4"),
        (" 123_[1-5] ", "123_[1-5]"),
        ("123+1", "123+1"),
        ("123.batch", "123.batch"),
        ("123.0", "123.0"),  # text: step 0 of job 123, not the number 123
        ("0123", "0123"),
        ("job 7", "job 7"),
    ],
)
def test_every_form_of_an_id_is_one_text(value: Any, want: str) -> None:
    assert normalise_job_id(value) == want


@pytest.mark.parametrize("value", [None, "", " ", "\t\n"])
def test_no_id(value: Any) -> None:
    assert normalise_job_id(value) is None


@pytest.mark.parametrize(
    "value",
    [True, False, -1, 1.5, -0.5, float("nan"), float("inf"), 2**63, 1e19, 1e300, [1], {"a": 1}],
)
def test_a_value_that_is_no_id_is_refused(value: Any) -> None:
    with pytest.raises(JobIdError):
        normalise_job_id(value)


@given(st.integers(0, 2**53), st.sampled_from(["", " ", "\t", "  \n"]))
def test_int_str_float_and_padded_forms_of_one_integer_are_equal(n: int, pad: str) -> None:
    forms = [n, str(n), float(n), f"{pad}{n}{pad}"]
    assert {normalise_job_id(f) for f in forms} == {str(n)}


def test_job_key_is_cluster_colon_id() -> None:
    assert job_key("alpha", "123") == "alpha:123"
    assert job_key("alpha", "123_4") != job_key("beta", "123_4")
