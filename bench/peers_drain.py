"""Peer implementations of the Moab drain replay for the replay benchmark: the query a skilled
operator would write in an afternoon, once as a polars lazy query and once as DuckDB SQL, with
drainwatch's rules (seed 000 as README.md states them):

- a node-status line gives (time, node, state, rsvlist, joblist); other lines are skipped;
- per node, a record whose time is not after the latest earlier record of the node (a
  duplicate or out of order) accrues nothing; every other record accrues [t_i, t_next) to its
  state, where t_next is the node's next such record;
- an interval longer than ``max_gap`` is unaccounted; drain = Idle with a non-empty rsvlist,
  charged to its first id; Idle with ``none`` is unallocated idle;
- intervals are split at local midnights of ``tz`` (DST days are 23/25 h);
- per day: accounted (every state), drain, unallocated idle, Down, unaccounted node-ms; drain %
  over the static basis (nodes seen in the whole log x the day's length) and the dynamic basis
  (accounted - Down); mean accounted seconds per node seen that day; ``short`` below 95 %;
- per job: drain node-ms, distinct nodes charged, first and last charged instant.

Each returns ``(jobs, days)``: job -> (drain_ms, nodes, first_ms, last_ms) and day (ISO date)
-> (accounted_ms, drain_ms, idle_ms, down_ms, unaccounted_ms, pct_static, pct_dynamic,
basis_s_per_node, quality). ``python bench/peers_drain.py polars|duckdb LOG TZ`` runs one and
prints its wall/CPU seconds and peak RSS as JSON (the benchmark runs each in a fresh process).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

LINE = (  # the node-status line (for reference: the peers split it at its quotes)
    r"^(\S+) \S+ \S+\s+Node '([^']*)' status: state='([^']*)' rsvlist='([^']*)' "
    r"joblist='([^']*)'\s*$"
)
KNOWN = ("Down", "Idle", "Busy", "Running", "Drained", "Draining")
Jobs = dict[str, tuple[int, int, int, int]]
Days = dict[str, tuple[Any, ...]]


def _finish_days(rows: list[tuple[Any, ...]], nodes: int) -> Days:
    """(day, day_ms, accounted, drain, idle, down, gap, nodes_day) -> the day rows."""
    out: Days = {}
    for day, day_ms, acc, drain, idle, down, gap, nd in rows:
        static = 100.0 * drain / (nodes * day_ms) if nodes else None
        dyn = 100.0 * drain / (acc - down) if acc - down > 0 else None
        basis = acc / 1000 / nd if nd else 0.0
        quality = "ok" if basis >= 0.95 * day_ms / 1000 else "short"
        out[str(day)] = (
            int(acc),
            int(drain),
            int(idle),
            int(down),
            int(gap),
            static,
            dyn,
            basis,
            quality,
        )
    return out


def midnights(lo_ms: int, hi_ms: int, tz: str) -> list[int]:
    """Local midnights of ``tz`` (POSIX ms) from the one at or before ``lo_ms`` to the first
    after ``hi_ms``."""
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(tz)
    day = datetime.fromtimestamp(lo_ms / 1000, zone).date()
    out = []
    while True:
        ms = round(datetime(day.year, day.month, day.day, tzinfo=zone).timestamp() * 1000)
        out.append(ms)
        if ms > hi_ms:
            return out
        day += timedelta(days=1)


def day_name(ms: int, tz: str) -> str:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    return datetime.fromtimestamp(ms / 1000, ZoneInfo(tz)).date().isoformat()


def polars_drain(path: str, tz: str, max_gap_ms: int = 600_000) -> tuple[Jobs, Days]:
    import polars as pl

    lf = pl.scan_csv(
        path,
        has_header=False,
        separator="\x1f",
        quote_char=None,
        new_columns=["line"],
        schema_overrides={"line": pl.Utf8},
    )
    state_map = {s.lower(): s for s in KNOWN}
    # split at the quotes: prefix ' node ' status: state= ' state ' rsvlist= ' rsv ' ...
    parts = pl.col("line").str.split_exact("'", 8)
    recs = (
        lf.filter(pl.col("line").str.contains(" status: state='", literal=True))
        .select(parts.alias("p"))
        .unnest("p")
        .filter(pl.col("field_2") == " status: state=")
        .select(
            t=pl.col("field_0")
            .str.split_exact(" ", 1)
            .struct.field("field_0")
            .str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%z", time_unit="ms", strict=False)
            .dt.epoch("ms"),
            node=pl.col("field_1"),
            state=pl.col("field_3").str.strip_chars(),
            rsv=pl.col("field_5").str.split(",").list.first().str.strip_chars(),
        )
        .filter(pl.col("t").is_not_null() & (pl.col("node") != "") & (pl.col("state") != ""))
        .with_columns(
            state=pl.col("state")
            .str.to_lowercase()
            .replace_strict(state_map, default=pl.col("state")),
            rsv=pl.when(pl.col("rsv").str.to_lowercase().is_in(["", "none"]))
            .then(None)
            .otherwise(pl.col("rsv")),
        )
        .with_columns(pl.col("node", "state", "rsv").cast(pl.Categorical))
        .collect()  # once: every query below starts from these records
        .lazy()
    )
    prev_max = pl.col("t").cum_max().shift(1).over("node")  # rows are in file order
    acc = (
        recs.filter(prev_max.is_null() | (pl.col("t") > prev_max))
        .with_columns(nt=pl.col("t").shift(-1).over("node"))
        .filter(pl.col("nt").is_not_null())
        .with_columns(gap=(pl.col("nt") - pl.col("t")) > max_gap_ms)
        .collect()
        .lazy()
    )
    nodes_all = recs.select(pl.col("node").n_unique()).collect().item()
    # per job: drain intervals (splitting at midnights does not change these)
    drain = acc.filter(~pl.col("gap") & (pl.col("state") == "Idle") & pl.col("rsv").is_not_null())
    jobs_df = (
        drain.group_by("rsv")
        .agg(
            d=(pl.col("nt") - pl.col("t")).sum(),
            n=pl.col("node").n_unique(),
            f=pl.col("t").min(),
            l=pl.col("nt").max(),
        )
        .collect()
    )
    jobs = {r[0]: (int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in jobs_df.iter_rows()}
    # per day: the local midnights as a small table; an interval in one day (nearly all) is
    # counted whole, the few that cross midnight are exploded over their days and clipped
    lo, hi = acc.select(pl.col("t").min(), pl.col("nt").max()).collect().row(0)
    edges = pl.Series("e", midnights(lo, hi, tz), dtype=pl.Int64)
    e = pl.lit(edges)
    iv = acc.with_columns(
        a=e.search_sorted(pl.col("t"), side="right").cast(pl.Int64) - 1,
        b=e.search_sorted(pl.col("nt") - 1, side="right").cast(pl.Int64) - 1,
    )
    one = iv.filter(pl.col("a") == pl.col("b")).select(
        "node", "state", "rsv", "gap", day=pl.col("a"), ms=pl.col("nt") - pl.col("t")
    )
    more = (
        iv.filter(pl.col("a") != pl.col("b"))
        .with_columns(day=pl.int_ranges(pl.col("a"), pl.col("b") + 1))
        .explode("day")
        .select(
            "node",
            "state",
            "rsv",
            "gap",
            "day",
            ms=pl.min_horizontal("nt", e.gather(pl.col("day") + 1))
            - pl.max_horizontal("t", e.gather(pl.col("day"))),
        )
    )
    pieces = pl.concat([one, more])
    s = pl.col("ms")
    ok = ~pl.col("gap")
    days_df = (
        pieces.group_by("day")
        .agg(
            acc=s.filter(ok).sum(),
            drain=s.filter(ok & (pl.col("state") == "Idle") & pl.col("rsv").is_not_null()).sum(),
            idle=s.filter(ok & (pl.col("state") == "Idle") & pl.col("rsv").is_null()).sum(),
            down=s.filter(ok & (pl.col("state") == "Down")).sum(),
            gap=s.filter(pl.col("gap")).sum(),
            nd=pl.col("node").n_unique(),
        )
        .sort("day")
        .collect()
    )
    days_rows = [
        (day_name(edges[d], tz), edges[d + 1] - edges[d], *rest) for d, *rest in days_df.iter_rows()
    ]
    return jobs, _finish_days(days_rows, nodes_all)


def duckdb_drain(path: str, tz: str, max_gap_ms: int = 600_000) -> tuple[Jobs, Days]:
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    states = " ".join(f"WHEN '{s.lower()}' THEN '{s}'" for s in KNOWN)
    q = f"""
    WITH raw AS (
        SELECT line FROM read_csv(?, columns = {{'line': 'VARCHAR'}}, delim = '\x1f',
                                  quote = '', escape = '', header = false)
    ), g AS (
        SELECT string_split(line, '''') AS f FROM raw
        WHERE contains(line, ' status: state=''')
    ), p AS (
        SELECT epoch_ms(try_strptime(split_part(f[1], ' ', 1), '%Y-%m-%dT%H:%M:%S.%g%z')) AS t,
               f[2] AS node,
               CASE lower(trim(f[4])) {states} ELSE trim(f[4]) END AS state,
               trim(split_part(f[6], ',', 1)) AS r0
        FROM g WHERE len(f) >= 8 AND f[3] = ' status: state=' AND f[2] <> ''
    ), recs AS (
        SELECT row_number() OVER () AS i, t, node, state,
               CASE WHEN lower(r0) IN ('', 'none') THEN NULL ELSE r0 END AS rsv
        FROM p WHERE t IS NOT NULL AND state <> ''
    )
    SELECT * FROM recs
    """
    acc = f"""
    WITH acc0 AS (
        SELECT *, max(t) OVER (PARTITION BY node ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING
                               AND 1 PRECEDING) AS pm FROM recs
    )
    SELECT *, nt - t > {max_gap_ms} AS gap FROM (
        SELECT *, lead(t) OVER (PARTITION BY node ORDER BY i) AS nt
        FROM acc0 WHERE pm IS NULL OR t > pm
    ) WHERE nt IS NOT NULL
    """
    con.execute(f"CREATE TEMP TABLE recs AS {q}", [path])
    con.execute(f"CREATE TEMP TABLE acc AS {acc}")
    nodes_all = con.execute("SELECT count(DISTINCT node) FROM recs").fetchone()[0]  # type: ignore[index]
    jobs = {
        r[0]: (int(r[1]), int(r[2]), int(r[3]), int(r[4]))
        for r in con.execute(
            "SELECT rsv, sum(nt - t), count(DISTINCT node), min(t), max(nt) FROM acc "
            "WHERE NOT gap AND state = 'Idle' AND rsv IS NOT NULL GROUP BY rsv"
        ).fetchall()
    }
    # the local midnights as a small table, joined on overlap (an inequality join)
    lo, hi = con.execute("SELECT min(t), max(nt) FROM acc").fetchone()  # type: ignore[misc]
    edges = midnights(lo, hi, tz)
    con.execute("CREATE TEMP TABLE days (day VARCHAR, d0 BIGINT, d1 BIGINT)")
    spans = zip(edges[:-1], edges[1:], strict=True)
    con.executemany(
        "INSERT INTO days VALUES (?, ?, ?)", [(day_name(a, tz), a, b) for a, b in spans]
    )
    days = con.execute(
        """
        WITH ms AS (
            SELECT day, d0, d1, node, state, rsv, gap, least(nt, d1) - greatest(t, d0) AS ms
            FROM acc JOIN days ON acc.t < days.d1 AND acc.nt > days.d0
        )
        SELECT day, any_value(d1 - d0),
               coalesce(sum(ms) FILTER (NOT gap), 0),
               coalesce(sum(ms) FILTER (NOT gap AND state = 'Idle' AND rsv IS NOT NULL), 0),
               coalesce(sum(ms) FILTER (NOT gap AND state = 'Idle' AND rsv IS NULL), 0),
               coalesce(sum(ms) FILTER (NOT gap AND state = 'Down'), 0),
               coalesce(sum(ms) FILTER (gap), 0),
               count(DISTINCT node)
        FROM ms GROUP BY day ORDER BY day
        """
    ).fetchall()
    return jobs, _finish_days(days, nodes_all)


def main() -> None:
    which, path, tz = sys.argv[1:4]
    t0, c0 = time.perf_counter(), time.process_time()
    jobs, days = (polars_drain if which == "polars" else duckdb_drain)(path, tz)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out = {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": ru.ru_maxrss / 1024,
        "jobs": jobs,
        "days": days,
    }
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main()
