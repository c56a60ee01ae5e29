"""The metric topics as a :class:`~streams.contracts.Sink`: table rows in, (topic, key, value)
messages out, handed to a ``send`` function at :meth:`TopicSink.commit`.

Which table goes to which topic, keyed by which columns, is :data:`ROUTES` (docs/topics.md):

* ``shortjobs.csv`` -> ``metrics.shortjobs``, key ``<holder_kind>:<holder>``;
* ``capability_daily.csv`` -> ``metrics.capability``, key ``<day>``;
* ``dfs_minutely.csv`` -> ``metrics.dfs``, key ``<minute_ms>``; ``dfs_minutely_fs.csv`` ->
  ``metrics.dfs``, key ``<fs>:<minute_ms>``;
* the drain path's windows (``drain_windows`` with their ``drain_window_states``) ->
  ``metrics.drain``, key ``<window>:<start_ms>``; its job totals (``drain_job_totals``) ->
  ``metrics.jobs``, key ``<job>``.

The table-row topics carry one row each (:func:`streams.codecs.metrics.row_messages`); the
drain topics keep their own messages (a window with its node-state breakdown,
:func:`~streams.codecs.metrics.window_message`; a job's totals,
:func:`~streams.codecs.metrics.job_message`), made from the rows. Any other table is ignored.
Pure of Kafka: the live runner gives ``send`` (the messages of one commit, in order; it returns
once the broker has them or raises).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from models.drain.live import LiveJob, LiveWindow
from streams.codecs.metrics import encode_job, encode_window, row_messages
from streams.contracts import Row, Table
from streams.topics import TopicNames

Message = tuple[str, bytes, bytes]  # full topic name, key, value

_ROWS, _WINDOWS, _STATES, _JOBS = "rows", "windows", "states", "jobs"
_WINDOW_COLS = ("window", "start")  # the drain tables' columns the sink reads by name

# table file -> (TopicNames field, the columns of the message key joined by ':', what the rows
# are); the drain path's tables are streams/stages/drain.py's LIVE_TABLES
ROUTES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "shortjobs.csv": ("metrics_shortjobs", ("holder_kind", "holder"), _ROWS),
    "capability_daily.csv": ("metrics_capability", ("day",), _ROWS),
    "dfs_minutely.csv": ("metrics_dfs", ("minute",), _ROWS),
    "dfs_minutely_fs.csv": ("metrics_dfs", ("fs", "minute"), _ROWS),
    "drain_windows": ("metrics_drain", _WINDOW_COLS, _WINDOWS),
    "drain_window_states": ("metrics_drain", _WINDOW_COLS, _STATES),
    "drain_job_totals": ("metrics_jobs", ("job",), _JOBS),
}
_COMBOS = 4  # (has_rsv, has_job) combinations of a window's node-state breakdown


@dataclass(frozen=True, slots=True)
class _Route:
    topic: str  # full topic name
    key: tuple[int, ...]  # the key's columns
    rows: str  # _ROWS, _WINDOWS, _STATES or _JOBS


class TopicSink:
    """Messages of the declared tables' rows, kept until :meth:`commit` hands them to
    ``send`` (and forgets them), or :meth:`abort` drops them. A drain window's message is made
    at the commit, with the node-state rows written for it before; a window written again
    before the commit is sent once, as last written. :meth:`document` does nothing."""

    def __init__(
        self, topics: TopicNames, cluster: str, send: Callable[[list[Message]], None]
    ) -> None:
        self.topics = topics
        self.cluster = cluster
        self.send = send
        self._routes: dict[Table, _Route | None] = {}
        self._messages: list[Message] = []
        # drain windows by (unit, start_ms), and their node-states: state -> node-ms per combo
        self._windows: dict[tuple[str, int], LiveWindow] = {}
        self._states: dict[tuple[str, int], dict[str, list[int]]] = {}
        self.sent = 0  # messages handed to send

    def declare(self, table: Table) -> None:
        """Note ``table``'s topic and key; a table without a metric topic is ignored."""
        if table in self._routes:
            return
        route = ROUTES.get(table.file)
        if route is None or not all(c in table.names for c in route[1]):
            self._routes[table] = None
            return
        field, key, rows = route
        index = tuple(table.names.index(c) for c in key)
        self._routes[table] = _Route(getattr(self.topics, field), index, rows)

    def write(self, table: Table, rows: Iterable[Row]) -> int:
        """Keep the rows' messages; returns the rows taken (0 for a table without a topic)."""
        self.declare(table)
        route = self._routes[table]
        if route is None:
            return 0
        batch = rows if isinstance(rows, list) else list(rows)
        if route.rows == _ROWS:
            values = row_messages(self.cluster, table, batch)
            self._messages += [
                (route.topic, ":".join(str(r[i]) for i in route.key).encode(), v)
                for r, v in zip(batch, values, strict=True)
            ]
        elif route.rows == _JOBS:
            for r in batch:
                j = LiveJob(*r)
                self._messages.append((route.topic, j.job.encode(), encode_job(self.cluster, j)))
        elif route.rows == _WINDOWS:
            for r in batch:
                w = LiveWindow(*r)
                key = (w.unit, w.start_ms)
                self._windows.pop(key, None)  # in the order last written
                self._windows[key] = w
                self._states.pop(key, None)  # its breakdown follows
        else:
            for unit, start, state, has_rsv, has_job, ms, _provisional in batch:
                combos = self._states.setdefault((unit, start), {})
                combos.setdefault(state, [0] * _COMBOS)[int(has_rsv) * 2 + int(has_job)] = ms
        return len(batch)

    def document(self, name: str, data: bytes) -> None:
        """Nothing: a document is no metric."""

    def commit(self) -> None:
        """Hand every message kept (the drain windows' first) to ``send``, then forget them;
        if ``send`` raises they are kept for the next commit (or :meth:`abort`)."""
        messages = self._window_messages() + self._messages
        if messages:
            self.send(messages)
            self.sent += len(messages)
        self.abort()

    def abort(self) -> None:
        """Drop every message kept."""
        self._messages = []
        self._windows = {}
        self._states = {}

    def _window_messages(self) -> list[Message]:
        topic = self.topics.metrics_drain
        out = []
        for key, w in self._windows.items():
            states = self._states.get(key)
            if states:
                w = replace(w, states=states)
            out.append((topic, f"{w.unit}:{w.start_ms}".encode(), encode_window(self.cluster, w)))
        return out
