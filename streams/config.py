"""Settings: the one configuration object every drainwatch command uses.

Load order, later wins: built-in defaults < TOML file < ``DRAINWATCH_*`` environment variables.
The TOML file is the ``--config`` path, else ``$DRAINWATCH_CONFIG``; it is parsed with the
standard library's ``tomllib``.

Each setting is declared once, as a field of the frozen dataclass of its TOML section
(:class:`KafkaSettings` for ``[kafka]``, ... ; :class:`GeneralSettings` holds the top-level
keys): the field name is the TOML key, the field default is the default, and :func:`setting`
puts the environment variable, kind, bounds and help in the field's metadata. :class:`Settings`
is made of the section objects (``settings.kafka.bootstrap``, ``settings.worker.lateness``).
Everything else is derived from those declarations: :data:`SPECS` (the flat table), the loader,
``describe()`` (``worker --print-settings``), ``deploy/drainwatch.example.toml`` and the README's
table (:func:`example_toml`, :func:`readme_table`; ``python -m streams.config --write-docs``
rewrites both, and tests keep them in step).

Secrets (InfluxDB token, Kafka SASL password, TLS key password) are read from an environment
variable or from a file (``DRAINWATCH_<NAME>_FILE`` or the TOML ``<key>_file``), never from a
TOML value or the command line, and are wrapped in :class:`Secret`, whose repr is ``'***'`` so
they cannot leak into logs or tracebacks through ``repr(settings)``.

Unknown ``DRAINWATCH_*`` variables, unknown TOML keys and bad values raise :class:`ConfigError`
naming the offending key.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import textwrap
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# defined with the other errors, so the CLI catches it without loading this module
from streams import logs
from streams.errors import ConfigError as ConfigError

if TYPE_CHECKING:  # ssl costs ~10 ms to import: only the worker's Kafka client needs it
    import ssl

ENV_PREFIX = "DRAINWATCH_"
CONFIG_ENV = "DRAINWATCH_CONFIG"
# DRAINWATCH_* variables that are not settings (read by the Makefile, the local stack in
# deploy/local/stack.py, tests); everything else with the prefix must be a setting.
NON_SETTING_ENV = frozenset(
    {
        CONFIG_ENV,
        "DRAINWATCH_REQUIRE_STACK",
        "DRAINWATCH_FUZZ_SCALE",
        "DRAINWATCH_GO",
        "DRAINWATCH_JAVA",
        "DRAINWATCH_MVN",
        "DRAINWATCH_KAFKA_PORT",
        "DRAINWATCH_KAFKA_CONTROLLER_PORT",
        "DRAINWATCH_INFLUX_PORT",
        "DRAINWATCH_INFLUX_RPC_PORT",
        "DRAINWATCH_KEEP_STACK",
    }
)
# DRAINWATCH_GRAFANA_*: the local stack's Grafana (stack.env), read by tests, not the worker
NON_SETTING_ENV_PREFIXES = ("DRAINWATCH_STACK_", "DRAINWATCH_TEST_", "DRAINWATCH_GRAFANA_")

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
STORES = ("memory://", "rocksdb://")
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")
# what a setting's value is; _coerce turns TOML values and env strings into it
KINDS = frozenset(
    (
        "str",
        "int",
        "float",
        "choice",
        "tz",
        "path",
        "file",
        "secret",
        "bootstrap",
        "rates",
        "instant",
    )
)


class Secret:
    """A secret string whose repr and str are ``'***'``; ``reveal()`` gives the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self) -> Any:  # never serialise a secret by accident
        raise TypeError("Secret values are not picklable")


# --- the declarations --------------------------------------------------------------------------


def setting(
    default: Any,
    *,
    env: str,
    help: str,
    kind: str | None = None,
    choices: tuple[str, ...] = (),
    minimum: float | None = None,
    maximum: float | None = None,
    example: Any = None,
) -> Any:
    """Declare one setting: a dataclass field with its default; the rest goes in its metadata.

    ``default`` is written as in TOML (an ``instant`` as ISO 8601 text, a ``path`` as text; the
    field holds it converted); None makes the setting optional (empty env value: unset).
    ``kind`` defaults to the type of ``default`` (int, float or str). ``example`` is the value
    the example TOML shows, commented out, for a setting that has no default to show."""
    kind = kind or type(default).__name__
    if kind not in KINDS or not env.startswith(ENV_PREFIX):
        raise AssertionError(f"bad declaration of {env}: kind {kind!r}")
    meta = {
        "env": env,
        "kind": kind,
        "default": default,
        "help": help,
        "choices": choices,
        "minimum": minimum,
        "maximum": maximum,
        "example": example,
    }
    value: Any = default
    if kind == "instant":
        value = _instant_ms(default, env)
    elif kind == "path" and default is not None:
        value = Path(default)
    return field(default=value, metadata=meta)


def _instant_ms(raw: Any, where: str) -> int:
    """A TOML datetime/date or an ISO 8601 string (UTC without an offset) -> epoch ms."""
    from datetime import UTC, date, datetime

    if isinstance(raw, datetime):
        dt = raw
    elif isinstance(raw, date):
        dt = datetime(raw.year, raw.month, raw.day)
    elif isinstance(raw, str):
        try:
            dt = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(where, f"{raw!r} is not an ISO 8601 date or time") from None
    else:
        raise ConfigError(where, f"expected an ISO 8601 date or time, got {raw!r}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return round(dt.timestamp() * 1000)


def _masked_repr(obj: Any) -> str:
    """``Name(field=value, ...)`` with every value masked (streams.logs.mask)."""
    inner = ", ".join(f"{f.name}={logs.mask(repr(getattr(obj, f.name)))}" for f in fields(obj))
    return f"{type(obj).__name__}({inner})"


class _Section:
    """What every section shares: a repr that shows no credential (secrets, URL passwords)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return _masked_repr(self)


@dataclass(frozen=True, slots=True, repr=False)
class GeneralSettings(_Section):
    """Top level: local state and logging."""

    state_dir: Path = setting(
        ".drainwatch",
        env="DRAINWATCH_STATE_DIR",
        kind="path",
        example="/var/lib/drainwatch",
        help="directory for local state (worker data dir, local stack)",
    )
    log_level: str = setting(
        "info",
        env="DRAINWATCH_LOG_LEVEL",
        kind="choice",
        choices=LOG_LEVELS,
        help="log level: debug, info, warning, error",
    )
    log_format: str = setting(
        "text",
        env="DRAINWATCH_LOG_FORMAT",
        kind="choice",
        choices=LOG_FORMATS,
        help="log line format: text, or json (one object per line, for journald/ELK)",
    )


@dataclass(frozen=True, slots=True, repr=False)
class KafkaSettings(_Section):
    """Kafka: brokers, security, topics."""

    bootstrap: str = setting(
        "127.0.0.1:19092",
        env="DRAINWATCH_KAFKA_BOOTSTRAP",
        kind="bootstrap",
        help="Kafka bootstrap servers, host:port[,host:port...] (default: the local stack)",
    )
    message_max_bytes: int = setting(
        900_000,
        env="DRAINWATCH_MESSAGE_MAX_BYTES",
        minimum=65_536,
        maximum=1_000_000,
        help="largest message drainwatch sends (bytes); kept below the producer's and topics' "
        "limits",
    )
    security_protocol: str = setting(
        "PLAINTEXT",
        env="DRAINWATCH_KAFKA_SECURITY_PROTOCOL",
        kind="choice",
        choices=SECURITY_PROTOCOLS,
        help="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
    )
    sasl_mechanism: str = setting(
        "PLAIN",
        env="DRAINWATCH_KAFKA_SASL_MECHANISM",
        kind="choice",
        choices=SASL_MECHANISMS,
        help="SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
    )
    sasl_username: str | None = setting(
        None,
        env="DRAINWATCH_KAFKA_SASL_USERNAME",
        kind="str",
        example="drainwatch",
        help="SASL user name (SASL_* protocols)",
    )
    sasl_password: Secret | None = setting(
        None,
        env="DRAINWATCH_KAFKA_SASL_PASSWORD",
        kind="secret",
        example="/etc/drainwatch/kafka_sasl_password",
        help="SASL password: env var or a file (_FILE / TOML sasl_password_file)",
    )
    ssl_cafile: Path | None = setting(
        None,
        env="DRAINWATCH_KAFKA_SSL_CAFILE",
        kind="file",
        example="/etc/drainwatch/kafka-ca.pem",
        help="PEM CA bundle that signed the brokers' certificates (else the system CAs)",
    )
    ssl_certfile: Path | None = setting(
        None,
        env="DRAINWATCH_KAFKA_SSL_CERTFILE",
        kind="file",
        example="/etc/drainwatch/client.pem",
        help="PEM client certificate for mutual TLS",
    )
    ssl_keyfile: Path | None = setting(
        None,
        env="DRAINWATCH_KAFKA_SSL_KEYFILE",
        kind="file",
        example="/etc/drainwatch/client.key",
        help="PEM private key of the client certificate",
    )
    ssl_key_password: Secret | None = setting(
        None,
        env="DRAINWATCH_KAFKA_SSL_KEY_PASSWORD",
        kind="secret",
        example="/etc/drainwatch/kafka_ssl_key_password",
        help="password of an encrypted ssl_keyfile: env var or a file",
    )
    topic_prefix: str = setting(
        "drainwatch.",
        env="DRAINWATCH_TOPIC_PREFIX",
        help="prefix of every topic name (node-status, job-events, ...)",
    )
    topic_partitions: int = setting(
        8,
        env="DRAINWATCH_TOPIC_PARTITIONS",
        minimum=1,
        help="partitions of the topics the app creates",
    )
    topic_replication_factor: int = setting(
        1,
        env="DRAINWATCH_TOPIC_REPLICATION_FACTOR",
        minimum=1,
        help="replication factor of the topics the app creates (3 on a production cluster)",
    )


@dataclass(frozen=True, slots=True, repr=False)
class InfluxSettings(_Section):
    """InfluxDB: where results are written."""

    url: str = setting(
        "http://127.0.0.1:18086",
        env="DRAINWATCH_INFLUX_URL",
        help="InfluxDB base URL (v2 write API; 1.8 and 2.x both serve it)",
    )
    org: str = setting(
        "drainwatch", env="DRAINWATCH_INFLUX_ORG", help="InfluxDB 2.x organisation (ignored by 1.8)"
    )
    bucket: str = setting(
        "drainwatch",
        env="DRAINWATCH_INFLUX_BUCKET",
        help="bucket written to (on 1.8: database/retention-policy, e.g. drainwatch/autogen)",
    )
    database: str = setting(
        "drainwatch",
        env="DRAINWATCH_INFLUX_DATABASE",
        help="database name InfluxQL queries and Grafana use (2.x: via a DBRP mapping)",
    )
    token: Secret | None = setting(
        None,
        env="DRAINWATCH_INFLUX_TOKEN",
        kind="secret",
        example="/etc/drainwatch/influx_token",
        help="API token: env var or a file (_FILE / TOML token_file); never argv",
    )


@dataclass(frozen=True, slots=True, repr=False)
class AccountingSettings(_Section):
    """Drain accounting (seed 000)."""

    tz: str = setting(
        "UTC", env="DRAINWATCH_TZ", kind="tz", help="IANA time zone of the day/hour windows"
    )
    max_gap: float = setting(
        600.0,
        env="DRAINWATCH_MAX_GAP",
        minimum=0.001,
        maximum=1e12,
        help="longest interval (s) accrued to a state; longer ones count as unaccounted",
    )
    nodes: int | None = setting(
        None,
        env="DRAINWATCH_NODES",
        kind="int",
        minimum=1,
        maximum=2**31 - 1,
        example=26846,
        help="schedulable nodes for the static drain basis (unset: no static %)",
    )
    cluster: str = setting(
        "default",
        env="DRAINWATCH_CLUSTER",
        help="cluster name: the 'cluster' tag of every InfluxDB point and metric message",
    )


@dataclass(frozen=True, slots=True, repr=False)
class BoundsSettings(_Section):
    """Bounds: what a plausible input looks like; every rejection is counted with its reason."""

    not_before: int = setting(
        "1970-01-01T00:00:00Z",
        env="DRAINWATCH_NOT_BEFORE",
        kind="instant",
        help="records earlier than this ISO 8601 time are implausible and rejected",
    )
    not_after: int = setting(
        "2100-01-01T00:00:00Z",
        env="DRAINWATCH_NOT_AFTER",
        kind="instant",
        help="records at or after this ISO 8601 time are implausible and rejected",
    )
    max_jump: float = setting(
        2_592_000.0,
        env="DRAINWATCH_MAX_JUMP",
        minimum=0.0,
        maximum=1e12,
        help="a few records more than this many seconds from the rest of their source are "
        "rejected as time_jump (0: off; default 30 days)",
    )
    reorder_window: float = setting(
        5.0,
        env="DRAINWATCH_REORDER_WINDOW",
        minimum=0.0,
        maximum=3600.0,
        help="node-status records up to this many seconds out of time order are put back in "
        "order; later ones count as out of order (0: off)",
    )
    max_line_bytes: int = setting(
        1_048_576,
        env="DRAINWATCH_MAX_LINE_BYTES",
        minimum=256,
        help="longer input lines are rejected as line_too_long without being held in memory",
    )
    max_hosts: int = setting(
        262_144,
        env="DRAINWATCH_MAX_HOSTS",
        minimum=1,
        help="host-list expressions naming more hosts are rejected as hostlist_too_large",
    )
    max_snapshot_bytes: int = setting(
        268_435_456,
        env="DRAINWATCH_MAX_SNAPSHOT_BYTES",
        minimum=65_536,
        help="a Slurm client's output (scontrol, squeue, sacct) longer than this is refused: the "
        "client killed, the snapshot or poll skipped and counted",
    )


@dataclass(frozen=True, slots=True, repr=False)
class WorkerSettings(_Section):
    """Streaming worker (Faust)."""

    lateness: float = setting(
        600.0,
        env="DRAINWATCH_LATENESS",
        minimum=0.0,
        maximum=1e6,
        help="event-time lateness (s): a window closes when every partition is this far past its "
        "end",
    )
    marker_interval: float = setting(
        10.0,
        env="DRAINWATCH_MARKER_INTERVAL",
        minimum=0.1,
        maximum=86400.0,
        help="seconds between a shipper's watermark markers on every partition of its topic",
    )
    shipper_timeout: float = setting(
        300.0,
        env="DRAINWATCH_SHIPPER_TIMEOUT",
        minimum=1.0,
        maximum=1e7,
        help="seconds (of the shippers' clocks) after which a silent shipper's watermark stops "
        "counting",
    )
    checkpoint_interval: float = setting(
        5.0,
        env="DRAINWATCH_CHECKPOINT_INTERVAL",
        minimum=0.1,
        maximum=1e6,
        help="seconds between state snapshots; offsets are committed only up to a snapshot",
    )
    flush_interval: float = setting(
        2.0,
        env="DRAINWATCH_FLUSH_INTERVAL",
        minimum=0.1,
        maximum=1e6,
        help="seconds between writes of open (provisional) windows",
    )
    mmap_threshold: int = setting(
        256,
        env="DRAINWATCH_MMAP_THRESHOLD",
        minimum=0,
        maximum=32_768,
        help="KiB above which the worker's memory is mmapped, so freed arrays leave the process "
        "(glibc); 0: glibc's own threshold (a quarter more records/s, a quarter more memory)",
    )
    live_jobs: str = setting(
        "off",
        env="DRAINWATCH_LIVE_JOBS",
        choices=("off", "on"),
        help="job-events analytics in the worker: off, or on (every job analytic, its alerts; "
        "docs/state.md)",
    )
    live_samples: str = setting(
        "off",
        env="DRAINWATCH_LIVE_SAMPLES",
        choices=("off", "on"),
        help="node-samples analytics in the worker: off, or on (DFS load per minute, hot zones "
        "and their alert; docs/state.md)",
    )
    connect_timeout: float = setting(
        120.0,
        env="DRAINWATCH_CONNECT_TIMEOUT",
        minimum=1.0,
        maximum=1e6,
        help="give up (one-line error, exit 1) when Kafka or InfluxDB stays unreachable this long",
    )
    store: str = setting(
        "memory://",
        env="DRAINWATCH_STORE",
        kind="choice",
        choices=STORES,
        help="Faust table store: memory:// or rocksdb:// (needs rocksdict)",
    )
    web_bind: str = setting(
        "127.0.0.1",
        env="DRAINWATCH_WEB_BIND",
        help="address the worker's web server (health, stats) binds",
    )
    web_port: int = setting(
        6066,
        env="DRAINWATCH_WEB_PORT",
        minimum=1,
        maximum=65_535,
        help="port of the worker's web server",
    )
    broker_session_timeout: float = setting(
        60.0,
        env="DRAINWATCH_BROKER_SESSION_TIMEOUT",
        minimum=1.0,
        maximum=1e6,
        help="consumer group session timeout (s); shorter (e.g. 10) joins faster locally",
    )
    broker_heartbeat_interval: float = setting(
        3.0,
        env="DRAINWATCH_BROKER_HEARTBEAT_INTERVAL",
        minimum=0.1,
        maximum=1e6,
        help="consumer heartbeat interval (s); < session timeout / 3",
    )
    broker_rebalance_timeout: float = setting(
        60.0,
        env="DRAINWATCH_BROKER_REBALANCE_TIMEOUT",
        minimum=1.0,
        maximum=1e6,
        help="consumer group rebalance timeout (s)",
    )


@dataclass(frozen=True, slots=True, repr=False)
class SamplesSettings(_Section):
    """Node samples (seed 003)."""

    period: float = setting(
        60.0,
        env="DRAINWATCH_SAMPLE_PERIOD",
        minimum=0.001,
        maximum=86400.0,
        help="seconds between a node's sweeps (a process younger than this counts all its I/O)",
    )
    mem_per_core: float | None = setting(
        None,
        env="DRAINWATCH_MEM_PER_CORE",
        kind="float",
        minimum=0.001,
        example=6.0,
        help="theoretical memory per core, GiB (node memory / cores; seed 003: 6); unset: no "
        "memory ratios",
    )
    cores_per_node: float | None = setting(
        None,
        env="DRAINWATCH_CORES_PER_NODE",
        kind="float",
        minimum=1.0,
        example=32.0,
        help="cores allocated per node when samples do not say",
    )


@dataclass(frozen=True, slots=True, repr=False)
class JobsSettings(_Section):
    """Job analytics in the worker (seeds 001, 002, 004)."""

    section_nodes: int | None = setting(
        None,
        env="DRAINWATCH_SECTION_NODES",
        kind="int",
        minimum=1,
        maximum=2**31 - 1,
        example=512,
        help="capability section (nodes) for live CUP40 (seed 004); unset: accounting.nodes; "
        "neither: no live capability",
    )
    backfill_flags: str = setting(
        "no",
        env="DRAINWATCH_BACKFILL_FLAGS",
        kind="choice",
        choices=("no", "yes"),
        help="yes when the job events carry backfill flags (sacct Flags, Moab): the modified CUP",
    )
    adjust_out: Path | None = setting(
        None,
        env="DRAINWATCH_ADJUST_OUT",
        kind="path",
        example="/var/lib/drainwatch/fairshare_adjust.tsv",
        help="file for a scheduler's fair-share hook: holder -> short-job penalty (seed 002), "
        "re-written atomically at each 3-minute tick",
    )
    size_groups: str = setting(
        "auto",
        env="DRAINWATCH_SIZE_GROUPS",
        kind="choice",
        choices=("auto", "absolute", "relative"),
        help="live drain by size group (seed 000 §V-D): absolute (the seed's sizes), relative "
        "(scaled to accounting.nodes) or auto (relative below 5,000 nodes), as replay's "
        "--size-groups",
    )


@dataclass(frozen=True, slots=True, repr=False)
class AlertsSettings(_Section):
    """Alert thresholds of the live worker."""

    shortjob_flood: float = setting(
        3600.0,
        env="DRAINWATCH_ALERT_SHORTJOB_FLOOD",
        minimum=0.0,
        help="short-job flood: A(t) of a user or group above this (slot-seconds; calibrate yours)",
    )
    overrun_margin: float = setting(
        60.0,
        env="DRAINWATCH_ALERT_OVERRUN_MARGIN",
        minimum=0.0,
        help="overrun: a job still running this many seconds past its upper estimate (seed 001)",
    )
    cup40_target: float = setting(
        0.8,
        env="DRAINWATCH_ALERT_CUP40_TARGET",
        minimum=0.0,
        maximum=1.0,
        help="capability: a day's CUP40 below this (seed 004's goal)",
    )
    sliding_node_hours: float = setting(
        100.0,
        env="DRAINWATCH_ALERT_SLIDING_NODE_HOURS",
        minimum=0.0,
        help="sliding job: a job never seen running whose drain reaches this many node-hours",
    )
    sliding_quiet: float = setting(
        3600.0,
        env="DRAINWATCH_ALERT_SLIDING_QUIET",
        minimum=0.0,
        help="sliding job resolved when no node has been held for it this long (s, event time)",
    )
    sliding_top_k: int = setting(
        5,
        env="DRAINWATCH_ALERT_SLIDING_TOP_K",
        minimum=0,
        maximum=10_000,
        help="sliding-rank alert: the K queued jobs with the most drain per node (seed 000 "
        "§V-A.2) with at least alerts.sliding_rank_node_hours; resolved past rank 2K; 0: off",
    )
    sliding_rank_node_hours: float = setting(
        1.0,
        env="DRAINWATCH_ALERT_SLIDING_RANK_NODE_HOURS",
        minimum=0.0,
        help="sliding-rank alert: least drain (node-hours) for a queued job to be ranked",
    )
    stalled_after: float = setting(
        300.0,
        env="DRAINWATCH_ALERT_STALLED_AFTER",
        minimum=0.0,
        help="stalled pipeline: no input on a topic for this many seconds of the worker's clock "
        "(0: off)",
    )
    hot_zone: float = setting(
        93.0,
        env="DRAINWATCH_ALERT_HOT_ZONE",
        minimum=0.0,
        help="hot zone: DFS write load above this (MB/s; seed 003's 98 - 5 MB/s IOR example)",
    )
    hot_zone_minutes: int = setting(
        5,
        env="DRAINWATCH_ALERT_HOT_ZONE_MINUTES",
        minimum=1,
        maximum=100_000,
        help="hot zone alert: after this many consecutive minutes above the threshold",
    )
    hot_zone_fs: tuple[tuple[str, float], ...] | None = setting(
        None,
        env="DRAINWATCH_ALERT_HOT_ZONE_FS",
        kind="rates",
        example="scratch=1.2GiB/s,home=500MB/s",
        help="hot zone per file system: FS=RATE[,FS=RATE...] (e.g. scratch=1.2GiB/s; a plain "
        "number is MB/s); the others use alerts.hot_zone (replay's --hot-zone-fs)",
    )
    ftl_node_hours: float = setting(
        10.0,
        env="DRAINWATCH_ALERT_FTL_NODE_HOURS",
        minimum=0.0,
        help="failure to launch: a job drained for at least this many node-hours, then ran < 30 s",
    )


@dataclass(frozen=True, slots=True, repr=False)
class Settings:
    """Effective configuration, one object per TOML section. Build it with :func:`load_settings`."""

    general: GeneralSettings = field(default_factory=GeneralSettings, metadata={"toml": ""})
    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    influx: InfluxSettings = field(default_factory=InfluxSettings)
    accounting: AccountingSettings = field(default_factory=AccountingSettings)
    bounds: BoundsSettings = field(default_factory=BoundsSettings)
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    samples: SamplesSettings = field(default_factory=SamplesSettings)
    jobs: JobsSettings = field(default_factory=JobsSettings)
    alerts: AlertsSettings = field(default_factory=AlertsSettings)

    # --- derived views -------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> list[str]:
        return [h.strip() for h in self.kafka.bootstrap.split(",") if h.strip()]

    @property
    def uses_ssl(self) -> bool:
        return self.kafka.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.kafka.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        """TLS context from the CA/cert/key files (aiokafka's helper; checks host names)."""
        if not self.uses_ssl:
            return None
        from aiokafka.helpers import create_ssl_context

        k = self.kafka
        password = k.ssl_key_password
        ctx: ssl.SSLContext = create_ssl_context(
            cafile=k.ssl_cafile,
            certfile=k.ssl_certfile,
            keyfile=k.ssl_keyfile,
            password=password.reveal() if password is not None else None,
        )
        return ctx

    def aiokafka_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for AIOKafkaProducer/Consumer/AdminClient (servers + security)."""
        k = self.kafka
        kw: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers,
            "security_protocol": k.security_protocol,
        }
        if self.uses_sasl:
            assert k.sasl_password is not None  # enforced by load_settings
            kw["sasl_mechanism"] = k.sasl_mechanism
            kw["sasl_plain_username"] = k.sasl_username
            kw["sasl_plain_password"] = k.sasl_password.reveal()
        if self.uses_ssl:
            kw["ssl_context"] = self.ssl_context()
        return kw

    def faust_kwargs(self) -> dict[str, Any]:
        """Broker URL and credentials for ``faust.App(**kwargs)``."""
        import faust

        k = self.kafka
        kw: dict[str, Any] = {
            "broker": ";".join(f"kafka://{h}" for h in self.bootstrap_servers),
        }
        if self.uses_sasl:
            assert k.sasl_password is not None
            kw["broker_credentials"] = faust.SASLCredentials(
                username=k.sasl_username,
                password=k.sasl_password.reveal(),
                mechanism=k.sasl_mechanism,
                ssl_context=self.ssl_context(),  # None for SASL_PLAINTEXT
            )
        elif self.uses_ssl:
            kw["broker_credentials"] = faust.SSLCredentials(self.ssl_context())
        return kw

    def value(self, name: str) -> Any:
        """The value of the setting called ``name`` (:attr:`Spec.name`, e.g. ``"lateness"``)."""
        return _BY_NAME[name].get(self)

    def describe(self) -> dict[str, str]:
        """Setting name -> printable value, secrets and URL credentials masked: safe to log."""
        out: dict[str, str] = {}
        for spec in SPECS:
            v = spec.get(self)
            out[spec.name] = "" if v is None else logs.mask(str(v))
        return out

    def __repr__(self) -> str:
        """``Settings(name=value, ...)`` by setting name, masked like :meth:`describe`: a repr
        in a traceback or log shows no credential."""
        inner = ", ".join(f"{s.name}={logs.mask(repr(s.get(self)))}" for s in SPECS)
        return f"Settings({inner})"


@dataclass(frozen=True, slots=True)
class Spec:
    """One setting as its declaration says, with where it lives (see :func:`setting`)."""

    attr: str  # the section's attribute on Settings ("general" for the top-level keys)
    key: str  # the field's name: the TOML key (a secret's TOML key is key + "_file")
    section: str  # TOML table; "" = top level
    env: str
    kind: str
    default: Any  # as written in TOML: an instant as ISO 8601 text, a path as text
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    example: Any = None  # shown, commented out, in the example TOML

    @property
    def name(self) -> str:
        """The setting's name: the environment variable's, lowercased (``describe()``'s key)."""
        return self.env.removeprefix(ENV_PREFIX).lower()

    @property
    def optional(self) -> bool:
        return self.default is None

    @property
    def toml_key(self) -> str:
        key = f"{self.key}_file" if self.kind == "secret" else self.key
        return f"{self.section}.{key}" if self.section else key

    def get(self, settings: Settings) -> Any:
        return getattr(getattr(settings, self.attr), self.key)


_SECTION_TYPES: dict[str, Any] = {f.name: f.default_factory for f in fields(Settings)}
# every setting, in declaration order, from the section dataclasses
SPECS: tuple[Spec, ...] = tuple(
    Spec(attr=sf.name, key=f.name, section=sf.metadata.get("toml", sf.name), **f.metadata)
    for sf in fields(Settings)
    for f in fields(_SECTION_TYPES[sf.name])
)
_BY_NAME = {s.name: s for s in SPECS}
_BY_PATH = {f"{s.attr}.{s.key}": s for s in SPECS}


def _env(path: str) -> str:
    """The environment variable of the setting at ``section.field`` (errors name it)."""
    return _BY_PATH[path].env


def _by_section(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Setting name -> value, grouped by section attribute and field name."""
    out: dict[str, dict[str, Any]] = {}
    for name, v in values.items():
        spec = _BY_NAME[name]
        out.setdefault(spec.attr, {})[spec.key] = v
    return out


# --- the documents derived from the declarations ------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_TOML = ROOT / "deploy" / "drainwatch.example.toml"
README = ROOT / "README.md"
README_BEGIN = "<!-- settings table: python -m streams.config --write-docs; a test checks it -->"
README_END = "<!-- end of the settings table -->"
_EXAMPLE_HEADER = """\
# drainwatch settings: every key, with its default and its environment variable.
# Generated from streams/config.py (python -m streams.config --write-docs); edit it there.
#
# Load order, later wins: built-in defaults < this file < DRAINWATCH_* environment variables.
# Point a command at this file with `drainwatch --config FILE ...` or DRAINWATCH_CONFIG=FILE.
# Relative paths are relative to this file's folder. Unknown keys are an error.
# Secrets (InfluxDB token, SASL password, TLS key password) are never written here: give a
# file with *_file (one line, mode 600) or the environment variable.
"""


def _toml_value(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, str) else repr(v)


def example_toml() -> str:
    """``deploy/drainwatch.example.toml``: every key with its help and environment variable;
    a default is set as it is, an optional setting or a path is shown commented out with an
    example."""
    lines = [_EXAMPLE_HEADER]
    for sf in fields(Settings):
        title = (_SECTION_TYPES[sf.name].__doc__ or "").strip().rstrip(".")
        section = sf.metadata.get("toml", sf.name)
        lines += ["", f"# ---- {title} ----", *([f"[{section}]"] if section else [])]
        for spec in SPECS:
            if spec.attr == sf.name:
                lines += ["", *_example_entry(spec)]
    return "\n".join(lines) + "\n"


def _example_entry(spec: Spec) -> list[str]:
    lines = textwrap.wrap(spec.help, 98, initial_indent="# ", subsequent_indent="# ")
    also = f"  (or {spec.env}_FILE)" if spec.kind == "secret" else ""
    lines.append(f"# env: {spec.env}{also}")
    key = spec.toml_key.rpartition(".")[2]
    if not spec.optional and spec.kind != "path":
        return [*lines, f"{key} = {_toml_value(spec.default)}"]
    if spec.example is None:
        raise AssertionError(f"{spec.env}: declare an example for the example TOML")
    shown = f"# {key} = {_toml_value(spec.example)}"
    if spec.default is not None:  # a relative path in the file is relative to the file
        shown += f"   (default {_toml_value(spec.default)}, relative to the working directory)"
    return [*lines, shown]


def _shown_default(spec: Spec) -> str:
    d = spec.default
    if d is None:
        return "unset"
    if isinstance(d, float) and d.is_integer():
        d = int(d)
    return f"`{d}`"


def readme_table() -> str:
    """README.md's settings table, between :data:`README_BEGIN` and :data:`README_END`."""
    rows = [README_BEGIN, "| env var | TOML key | default | meaning |", "| --- | --- | --- | --- |"]
    for spec in SPECS:
        env = f"{spec.env}[_FILE]" if spec.kind == "secret" else spec.env
        meaning = spec.help.replace("|", "\\|")
        rows.append(f"| `{env}` | `{spec.toml_key}` | {_shown_default(spec)} | {meaning} |")
    rows.append(README_END)
    return "\n".join(rows)


def _readme_with_table(text: str) -> str:
    head, begin, rest = text.partition(README_BEGIN)
    _, end, tail = rest.partition(README_END)
    if not begin or not end:
        raise ValueError(f"README.md has no {README_BEGIN} ... {README_END} block")
    return head + readme_table() + tail


def write_docs() -> None:
    """Rewrite the example TOML and README.md's settings table from the declarations."""
    from streams.atomic import atomic_file

    readme = _readme_with_table(README.read_text(encoding="utf-8"))
    for path, text in ((EXAMPLE_TOML, example_toml()), (README, readme)):
        with atomic_file(path) as f:
            f.write(text.encode("utf-8"))


# --- loading ---------------------------------------------------------------------------------


def load_settings(
    config_path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Defaults < TOML file (``config_path`` or ``$DRAINWATCH_CONFIG``) < ``DRAINWATCH_*``."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    path = config_path if config_path is not None else env.get(CONFIG_ENV) or None
    if path is not None:
        values.update(_from_toml(Path(path)))
    values.update(_from_env(env))
    sections = {a: _SECTION_TYPES[a](**kw) for a, kw in _by_section(values).items()}
    return _validate(Settings(**sections))


def _from_toml(path: Path) -> dict[str, Any]:
    """The settings of a TOML file: a regular file of at most 1 MiB (a FIFO or a device is
    refused before it is read: streams.errors.read_small)."""
    from streams.errors import FileRefused, read_small

    try:
        doc = tomllib.loads(read_small(path).decode("utf-8"))
    except FileRefused as e:
        raise ConfigError(f"config file {path}", e.reason) from None
    except OSError as e:
        raise ConfigError(f"config file {path}", f"cannot be read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path}", "not valid TOML: not UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {path}", f"not valid TOML: {e}") from None
    by_key = {s.toml_key: s for s in SPECS}
    secret_values = {f"{s.section}.{s.key}": s for s in SPECS if s.kind == "secret"}
    out: dict[str, Any] = {}
    base = path.resolve().parent
    for dotted, raw in _flatten(doc):
        where = f"{dotted} (in {path})"
        if dotted in secret_values:
            raise ConfigError(
                where,
                f"secrets are not read from the TOML file; put it in a file and set "
                f"{dotted}_file, or set {secret_values[dotted].env}",
            )
        spec = by_key.get(dotted)
        if spec is None:
            raise ConfigError(where, "unknown setting" + _did_you_mean(dotted, by_key))
        if spec.kind == "secret":
            out[spec.name] = _read_secret_file(where, _resolve(base, raw, where))
        elif spec.kind in ("file", "path") and isinstance(raw, str):
            out[spec.name] = _coerce(spec, str(_resolve(base, raw, where)), where)
        else:
            out[spec.name] = _coerce(spec, raw, where)
    return out


def _flatten(doc: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for k, v in doc.items():
        dotted = f"{prefix}{k}"
        if isinstance(v, dict) and not prefix:
            items.extend(_flatten(v, dotted + "."))
        else:
            items.append((dotted, v))
    return items


def _resolve(base: Path, raw: Any, where: str) -> Path:
    if not isinstance(raw, str) or not raw:
        raise ConfigError(where, f"expected a path string, got {raw!r}")
    p = Path(raw).expanduser()
    return p if p.is_absolute() else base / p


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    by_env = {s.env: s for s in SPECS}
    files = {s.env + "_FILE": s for s in SPECS if s.kind == "secret"}
    out: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or name in NON_SETTING_ENV:
            continue
        if name.startswith(NON_SETTING_ENV_PREFIXES):
            continue
        spec = by_env.get(name)
        if spec is not None:
            if spec.kind == "secret":
                if spec.env + "_FILE" in env:
                    raise ConfigError(name, f"set either {name} or {name}_FILE, not both")
                if not raw:
                    raise ConfigError(name, "is empty")
                out[spec.name] = Secret(raw)
            else:
                out[spec.name] = _coerce(spec, raw, name)
        elif name in files:
            out[files[name].name] = _read_secret_file(name, Path(raw))
        else:
            known = list(by_env) + list(files) + sorted(NON_SETTING_ENV)
            raise ConfigError(name, "unknown drainwatch setting" + _did_you_mean(name, known))
    return out


def _read_secret_file(where: str, path: Path) -> Secret:
    """A secret from a regular UTF-8 file of at most 64 KiB (a FIFO or a device is refused
    before it is read: streams.errors.read_small)."""
    from streams.errors import SECRET_FILE_CAP, FileRefused, read_small

    try:
        text = read_small(path, SECRET_FILE_CAP).decode("utf-8")
    except FileRefused as e:
        raise ConfigError(where, f"cannot read secret file {path}: {e.reason}") from None
    except OSError as e:
        raise ConfigError(where, f"cannot read secret file {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(where, f"cannot read secret file {path}: not UTF-8 text") from None
    value = text.strip("\r\n")
    if not value.strip():
        raise ConfigError(where, f"secret file {path} is empty")
    return Secret(value)


def _did_you_mean(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _coerce(spec: Spec, raw: Any, where: str) -> Any:
    """Turn a TOML value or an env string into the setting's type, or raise ConfigError."""
    if spec.optional and (raw is None or (isinstance(raw, str) and raw.strip() == "")):
        return None
    kind = spec.kind
    if kind == "instant":
        return _instant_ms(raw, where)
    if kind == "rates":
        return _fs_rates(raw, where)
    if kind in ("str", "bootstrap", "choice", "tz", "path", "file"):
        if not isinstance(raw, str):
            raise ConfigError(where, f"expected a string, got {raw!r}")
        value = raw.strip()
        if not value:
            raise ConfigError(where, "must not be empty")
        if kind == "choice":
            lower = spec.choices[0] == spec.choices[0].lower()
            norm = value.lower() if lower else value.upper()
            if norm not in spec.choices:
                raise ConfigError(where, f"{raw!r} is not one of {', '.join(spec.choices)}")
            return norm
        if kind == "tz":
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ConfigError(where, f"{raw!r} is not an IANA time zone") from None
            return value
        if kind == "bootstrap":
            return _check_bootstrap(value, where)
        if kind == "path":
            return Path(value).expanduser()
        if kind == "file":
            p = Path(value).expanduser()
            if not p.is_file():
                raise ConfigError(where, f"file {p} does not exist")
            return p
        return value
    if kind == "int":
        value = _number(raw, where, int)
    elif kind == "float":
        value = _number(raw, where, float)
    else:  # pragma: no cover - SPECS is static
        raise AssertionError(kind)
    if spec.minimum is not None and value < spec.minimum:
        raise ConfigError(where, f"{value!r} is below the minimum {spec.minimum:g}")
    if spec.maximum is not None and value > spec.maximum:
        raise ConfigError(where, f"{value!r} is above the maximum {spec.maximum:g}")
    return value


def _number(raw: Any, where: str, typ: Callable[[Any], Any]) -> Any:
    if isinstance(raw, bool):
        raise ConfigError(where, f"expected a number, got {raw!r}")
    if typ is int and isinstance(raw, float):
        raise ConfigError(where, f"expected an integer, got {raw!r}")
    try:
        value = typ(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        kind = "an integer" if typ is int else "a number"
        raise ConfigError(where, f"{raw!r} is not {kind}") from None
    if typ is float and (value != value or value in (float("inf"), float("-inf"))):
        raise ConfigError(where, f"{raw!r} is not a finite number")
    return value


def _fs_rates(raw: Any, where: str) -> tuple[tuple[str, float], ...]:
    """``FS=RATE[,FS=RATE...]`` (``scratch=1.2GiB/s,home=500MB/s``; a plain number is MB/s)
    -> ((fs, MB/s), ...), in the order given."""
    from models.samples.dfs import parse_fs_rates

    if not isinstance(raw, str):
        raise ConfigError(where, f"expected a string FS=RATE[,FS=RATE...], got {raw!r}")
    try:
        rates = parse_fs_rates(item.strip() for item in raw.split(","))
    except ValueError as e:
        raise ConfigError(where, str(e)) from None
    return tuple((fs, rate.to("MB/s")) for fs, rate in rates.items())


def _check_bootstrap(value: str, where: str) -> str:
    hosts = [h.strip() for h in value.split(",")]
    for h in hosts:
        host, sep, port = h.rpartition(":")
        shown = logs.mask(repr(h))  # a message never shows a password given in the value
        if "@" in h:
            raise ConfigError(
                where,
                f"{shown}: give host:port without credentials (kafka.sasl_username and "
                "DRAINWATCH_KAFKA_SASL_PASSWORD_FILE carry them)",
            )
        if "://" in h:
            raise ConfigError(where, f"{shown}: give host:port without a scheme")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(where, f"{shown} is not host:port")
    return ",".join(hosts)


def _validate(s: Settings) -> Settings:
    """Cross-field rules; errors name the setting's environment variable."""
    k, w = s.kafka, s.worker
    if s.uses_sasl:
        if not k.sasl_username:
            raise ConfigError(
                _env("kafka.sasl_username"),
                f"required with security protocol {k.security_protocol}",
            )
        if k.sasl_password is None:
            raise ConfigError(
                _env("kafka.sasl_password"),
                f"required with security protocol {k.security_protocol} "
                f"(or {_env('kafka.sasl_password')}_FILE)",
            )
    if not s.uses_ssl:
        for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_key_password"):
            if getattr(k, key) is not None:
                raise ConfigError(
                    _env(f"kafka.{key}"),
                    f"set but security protocol is {k.security_protocol} (use SSL or SASL_SSL)",
                )
    if k.ssl_keyfile is not None and k.ssl_certfile is None:
        raise ConfigError(_env("kafka.ssl_keyfile"), "needs kafka_ssl_certfile too")
    if w.broker_heartbeat_interval * 3 > w.broker_session_timeout:
        raise ConfigError(
            _env("worker.broker_heartbeat_interval"),
            f"{w.broker_heartbeat_interval:g} s must be at most a third of "
            f"broker_session_timeout ({w.broker_session_timeout:g} s)",
        )
    if not k.topic_prefix.replace(".", "").replace("-", "").replace("_", "").isalnum():
        raise ConfigError(
            _env("kafka.topic_prefix"),
            f"{k.topic_prefix!r}: topic names allow letters, digits, '.', '_', '-'",
        )
    if s.bounds.not_before >= s.bounds.not_after:
        raise ConfigError(_env("bounds.not_before"), "must be earlier than not_after")
    return s


def setup_logging(args: argparse.Namespace, stream: TextIO | None = None) -> None:
    """:func:`streams.logs.setup` from ``--log-level``/``--log-format``, else the settings
    (``--config``, ``DRAINWATCH_LOG_LEVEL``/``DRAINWATCH_LOG_FORMAT``), else info/text.
    Settings that do not load are not an error here: the command reports them itself."""
    level = getattr(args, "log_level", None)
    fmt = getattr(args, "log_format", None)
    if level is None or fmt is None:
        try:
            settings = load_settings(getattr(args, "config", None))
        except Exception:  # the command reports a bad configuration itself
            settings = None
        level = level or (settings.general.log_level if settings else "info")
        fmt = fmt or (settings.general.log_format if settings else "text")
    logs.setup(level, fmt, stream)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write-docs"]:
        sys.exit("usage: python -m streams.config --write-docs (the example TOML, README's table)")
    write_docs()
