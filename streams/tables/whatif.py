"""The tables of ``drainwatch whatif``: each policy side by side, and each user's effect."""

from __future__ import annotations

from streams.contracts import Table, cols

_KEY = (
    ("policy", "text", "as-run, easy, easy-predicted, easy-perfect or conservative"),
    (
        "estimate",
        "text",
        "the run time the policy plans with: recorded (as-run), request, last-two (Tsafrir et "
        "al. 2007), trimmed-upper (seed 001), actual",
    ),
)
WHATIF = Table(
    "whatif.csv",
    cols(
        *_KEY,
        ("jobs", "int", "jobs scheduled"),
        ("span_start", "instant", "the first submit"),
        ("span_end", "instant", "the last end under this policy"),
        (
            "drain_node_hours",
            "number",
            "node-hours Idle with a reservation (seed 000), accounted by the replay's "
            "accountant; empty for as-run (the trace shows no reservations)",
        ),
        ("drain_pct_static", "number", "drain / (nodes x span) x 100"),
        ("utilisation_pct", "number", "node-seconds used / (nodes x span) x 100"),
        ("mean_wait_seconds", "number", "mean of start - submit"),
        ("p95_wait_seconds", "number", "95th percentile wait, nearest rank"),
        (
            "mean_bounded_slowdown",
            "number",
            "mean of max(1, (wait + run) / max(run, 10 s))",
        ),
        ("started_late", "int", "jobs that start later than as-run"),
        ("mean_wait_change_seconds", "number", "mean wait - as-run's mean wait"),
    ),
    "Each policy's schedule of the site's own jobs, side by side (docs/whatif.md).",
)
WHATIF_USERS = Table(
    "whatif_users.csv",
    cols(
        *_KEY,
        ("user", "text", "the user"),
        ("jobs", "int", "the user's jobs"),
        ("mean_wait_seconds", "number", "the user's mean wait under this policy"),
        ("as_run_mean_wait_seconds", "number", "the user's mean wait as run"),
        ("mean_wait_change_seconds", "number", "mean of (wait - wait as run): > 0 waits longer"),
        ("jobs_waiting_longer", "int", "jobs that wait longer than as run"),
        ("jobs_waiting_shorter", "int", "jobs that wait less than as run"),
    ),
    "Per policy and user, the effect on waits against the recorded schedule (users in "
    "code-point order).",
)
TABLES = (WHATIF, WHATIF_USERS)
FILES = sorted({t.file for t in TABLES} | {"summary_whatif.json"})
