"""A job's identity, the same for every job format (issue 31, class 5).

One normalisation of job ids, :func:`normalise_job_id`, used by every job format (sacct,
jobcomp, SWF, the JSON-lines job events), so that one job written in another form is one job:

- text is stripped of leading and trailing whitespace and otherwise kept as written: Slurm's
  array and heterogeneous-job ids (``123_4``, ``123_[1-5]``, ``123+1``) and step ids
  (``123.batch``; ``123.0`` as *text* is step 0 of job 123, not the number 123) stay as they
  are, and so do leading zeros;
- a number (a JSON integer, an integral JSON float such as ``123.0``, an SWF job number) is
  written in decimal digits without a fraction: ``123``;
- so ``123``, ``"123"``, ``123.0`` and ``" 123"`` are all the job ``"123"``.

None, empty and blank text give no id (each format's ``missing_...`` reason); a boolean, a
negative, fractional or non-finite number, a number above 2**63 - 1, a list or an object is no
id (:class:`JobIdError`, each format's ``bad_...`` reason).

Where a source gives the cluster of a record (sacct's ``Cluster`` field, jobcomp's
``cluster``), a job's identity is (cluster, job id): ``sacct -M all`` prints the same ids for
different clusters' jobs. When the records of one run name more than one cluster, every job
id of a record with a cluster is written :func:`job_key` ``cluster:id`` (``alpha:123``), in
every output; a run of one cluster (or of sources that give none) keeps the bare ids, so its
outputs are those of a run that ignored clusters.
"""

from __future__ import annotations

import math

from models.records.ranges import MAX_ID


class JobIdError(ValueError):
    """A value that is no job id (see :func:`normalise_job_id`)."""


def normalise_job_id(v: object) -> str | None:
    """The job id of a record's id value, one text for every form of one id (the module's
    rule): text stripped of surrounding whitespace and otherwise as written; a number (an
    integer, or an integral float such as 123.0) as its decimal digits. None for no id (None,
    empty or blank text); :class:`JobIdError` for a value that is no id."""
    if v is None:
        return None
    if isinstance(v, str):
        s = v.strip()
        return s or None
    if isinstance(v, bool):
        raise JobIdError(repr(v))
    if isinstance(v, int):
        if not 0 <= v <= MAX_ID:
            raise JobIdError(repr(v))
        return str(v)
    if isinstance(v, float):
        if not (math.isfinite(v) and v.is_integer() and 0 <= v <= MAX_ID):
            raise JobIdError(repr(v))
        return str(int(v))
    raise JobIdError(repr(v))


def job_key(cluster: str, job: str) -> str:
    """A job's id qualified by its cluster, ``cluster:id``: used when one run's records name
    more than one cluster (see the module docstring)."""
    return f"{cluster}:{job}"
