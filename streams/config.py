"""Settings: the one configuration object every drainwatch command uses.

Load order, later wins: built-in defaults < TOML file < ``DRAINWATCH_*`` environment variables.
The TOML file is the ``--config`` path, else ``$DRAINWATCH_CONFIG``; it is parsed with the
standard library's ``tomllib``. Each setting has one TOML key (``section.key``) and one
environment variable; :data:`SPECS` is the table of all of them (the README and
``deploy/drainwatch.example.toml`` document the same table, and a test keeps them in step).

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
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
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


@dataclass(frozen=True, slots=True)
class Spec:
    """One setting: its field, TOML section/key, kind, default and meaning."""

    name: str
    section: str  # TOML table; "" = top level
    key: str
    kind: str  # str | int | float | choice | tz | path | file | secret | bootstrap | rates
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    optional: bool = False
    maximum: float | None = None

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def toml_key(self) -> str:
        key = f"{self.key}_file" if self.kind == "secret" else self.key
        return f"{self.section}.{key}" if self.section else key


SPECS: tuple[Spec, ...] = (
    # --- Kafka ---
    Spec(
        "kafka_bootstrap",
        "kafka",
        "bootstrap",
        "bootstrap",
        "127.0.0.1:19092",
        "Kafka bootstrap servers, host:port[,host:port...] (default: the local stack)",
    ),
    Spec(
        "kafka_security_protocol",
        "kafka",
        "security_protocol",
        "choice",
        "PLAINTEXT",
        "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
        choices=SECURITY_PROTOCOLS,
    ),
    Spec(
        "kafka_sasl_mechanism",
        "kafka",
        "sasl_mechanism",
        "choice",
        "PLAIN",
        "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
        choices=SASL_MECHANISMS,
    ),
    Spec(
        "kafka_sasl_username",
        "kafka",
        "sasl_username",
        "str",
        None,
        "SASL user name (SASL_* protocols)",
        optional=True,
    ),
    Spec(
        "kafka_sasl_password",
        "kafka",
        "sasl_password",
        "secret",
        None,
        "SASL password: env var or a file (_FILE / TOML sasl_password_file)",
        optional=True,
    ),
    Spec(
        "kafka_ssl_cafile",
        "kafka",
        "ssl_cafile",
        "file",
        None,
        "PEM CA bundle that signed the brokers' certificates (else the system CAs)",
        optional=True,
    ),
    Spec(
        "kafka_ssl_certfile",
        "kafka",
        "ssl_certfile",
        "file",
        None,
        "PEM client certificate for mutual TLS",
        optional=True,
    ),
    Spec(
        "kafka_ssl_keyfile",
        "kafka",
        "ssl_keyfile",
        "file",
        None,
        "PEM private key of the client certificate",
        optional=True,
    ),
    Spec(
        "kafka_ssl_key_password",
        "kafka",
        "ssl_key_password",
        "secret",
        None,
        "password of an encrypted ssl_keyfile: env var or a file",
        optional=True,
    ),
    Spec(
        "topic_prefix",
        "kafka",
        "topic_prefix",
        "str",
        "drainwatch.",
        "prefix of every topic name (node-status, job-events, ...)",
    ),
    Spec(
        "topic_partitions",
        "kafka",
        "topic_partitions",
        "int",
        8,
        "partitions of the topics the app creates",
        minimum=1,
    ),
    Spec(
        "topic_replication_factor",
        "kafka",
        "topic_replication_factor",
        "int",
        1,
        "replication factor of the topics the app creates (3 on a production cluster)",
        minimum=1,
    ),
    # --- InfluxDB ---
    Spec(
        "influx_url",
        "influx",
        "url",
        "str",
        "http://127.0.0.1:18086",
        "InfluxDB base URL (v2 write API; 1.8 and 2.x both serve it)",
    ),
    Spec(
        "influx_org",
        "influx",
        "org",
        "str",
        "drainwatch",
        "InfluxDB 2.x organisation (ignored by 1.8)",
    ),
    Spec(
        "influx_bucket",
        "influx",
        "bucket",
        "str",
        "drainwatch",
        "bucket written to (on 1.8: database/retention-policy, e.g. drainwatch/autogen)",
    ),
    Spec(
        "influx_database",
        "influx",
        "database",
        "str",
        "drainwatch",
        "database name InfluxQL queries and Grafana use (2.x: via a DBRP mapping)",
    ),
    Spec(
        "influx_token",
        "influx",
        "token",
        "secret",
        None,
        "API token: env var or a file (_FILE / TOML token_file); never argv",
        optional=True,
    ),
    # --- Accounting ---
    Spec("tz", "accounting", "tz", "tz", "UTC", "IANA time zone of the day/hour windows"),
    Spec(
        "max_gap",
        "accounting",
        "max_gap",
        "float",
        600.0,
        "longest interval (s) accrued to a state; longer ones count as unaccounted",
        minimum=0.001,
        maximum=1e12,
    ),
    Spec(
        "nodes",
        "accounting",
        "nodes",
        "int",
        None,
        "schedulable nodes for the static drain basis (unset: no static %)",
        minimum=1,
        maximum=2**31 - 1,
        optional=True,
    ),
    Spec(
        "cluster",
        "accounting",
        "cluster",
        "str",
        "default",
        "cluster name: the 'cluster' tag of every InfluxDB point and metric message",
    ),
    # --- Bounds: what a plausible input looks like (issue policy 5 and 6) ---
    Spec(
        "not_before",
        "bounds",
        "not_before",
        "instant",
        "1970-01-01T00:00:00Z",
        "records earlier than this ISO 8601 time are implausible and rejected",
    ),
    Spec(
        "not_after",
        "bounds",
        "not_after",
        "instant",
        "2100-01-01T00:00:00Z",
        "records at or after this ISO 8601 time are implausible and rejected",
    ),
    Spec(
        "max_jump",
        "bounds",
        "max_jump",
        "float",
        2_592_000.0,
        "a few records more than this many seconds from the rest of their source are "
        "rejected as time_jump (0: off; default 30 days)",
        minimum=0.0,
        maximum=1e12,
    ),
    Spec(
        "reorder_window",
        "bounds",
        "reorder_window",
        "float",
        5.0,
        "node-status records up to this many seconds out of time order are put back in "
        "order; later ones count as out of order (0: off)",
        minimum=0.0,
        maximum=3600.0,
    ),
    Spec(
        "max_line_bytes",
        "bounds",
        "max_line_bytes",
        "int",
        1_048_576,
        "longer input lines are rejected as line_too_long without being held in memory",
        minimum=256,
    ),
    Spec(
        "max_hosts",
        "bounds",
        "max_hosts",
        "int",
        262_144,
        "host-list expressions naming more hosts are rejected as hostlist_too_large",
        minimum=1,
    ),
    Spec(
        "max_snapshot_bytes",
        "bounds",
        "max_snapshot_bytes",
        "int",
        268_435_456,
        "a Slurm client's output (scontrol, squeue, sacct) longer than this is refused: the "
        "client killed, the snapshot or poll skipped and counted",
        minimum=65_536,
    ),
    # --- Worker ---
    Spec(
        "state_dir",
        "",
        "state_dir",
        "path",
        ".drainwatch",
        "directory for local state (worker data dir, local stack)",
    ),
    Spec(
        "log_level",
        "",
        "log_level",
        "choice",
        "info",
        "log level: debug, info, warning, error",
        choices=LOG_LEVELS,
    ),
    Spec(
        "log_format",
        "",
        "log_format",
        "choice",
        "text",
        "log line format: text, or json (one object per line, for journald/ELK)",
        choices=LOG_FORMATS,
    ),
    Spec(
        "store",
        "worker",
        "store",
        "choice",
        "memory://",
        "Faust table store: memory:// or rocksdb:// (needs rocksdict)",
        choices=STORES,
    ),
    Spec(
        "web_bind",
        "worker",
        "web_bind",
        "str",
        "127.0.0.1",
        "address the worker's web server (health, stats) binds",
    ),
    Spec(
        "web_port",
        "worker",
        "web_port",
        "int",
        6066,
        "port of the worker's web server",
        minimum=1,
        maximum=65535,
    ),
    Spec(
        "lateness",
        "worker",
        "lateness",
        "float",
        600.0,
        "event-time lateness (s): a window closes when every partition is this far past its end",
        minimum=0.0,
        maximum=1e6,
    ),
    Spec(
        "message_max_bytes",
        "kafka",
        "message_max_bytes",
        "int",
        900_000,
        "largest message drainwatch sends (bytes); kept below the producer's and topics' limits",
        minimum=65_536,
        maximum=1_000_000,
    ),
    Spec(
        "marker_interval",
        "worker",
        "marker_interval",
        "float",
        10.0,
        "seconds between a shipper's watermark markers on every partition of its topic",
        minimum=0.1,
        maximum=86_400.0,
    ),
    Spec(
        "shipper_timeout",
        "worker",
        "shipper_timeout",
        "float",
        300.0,
        "seconds (of the shippers' clocks) after which a silent shipper's watermark stops counting",
        minimum=1.0,
        maximum=1e7,
    ),
    Spec(
        "checkpoint_interval",
        "worker",
        "checkpoint_interval",
        "float",
        5.0,
        "seconds between state snapshots; offsets are committed only up to a snapshot",
        minimum=0.1,
        maximum=1e6,
    ),
    Spec(
        "flush_interval",
        "worker",
        "flush_interval",
        "float",
        2.0,
        "seconds between writes of open (provisional) windows",
        minimum=0.1,
        maximum=1e6,
    ),
    Spec(
        "live_jobs",
        "worker",
        "live_jobs",
        "str",
        "off",
        "job-events analytics in the worker: off, or on (every job analytic, its alerts; "
        "docs/state.md)",
        choices=("off", "on"),
    ),
    Spec(
        "live_samples",
        "worker",
        "live_samples",
        "str",
        "off",
        "node-samples analytics in the worker: off, or on (DFS load per minute, hot zones and "
        "their alert; docs/state.md)",
        choices=("off", "on"),
    ),
    Spec(
        "sample_period",
        "samples",
        "period",
        "float",
        60.0,
        "seconds between a node's sweeps (a process younger than this counts all its I/O)",
        minimum=0.001,
        maximum=86400.0,
    ),
    Spec(
        "mem_per_core",
        "samples",
        "mem_per_core",
        "float",
        None,
        "theoretical memory per core, GiB (node memory / cores; seed 003: 6); unset: no "
        "memory ratios",
        minimum=0.001,
        optional=True,
    ),
    Spec(
        "cores_per_node",
        "samples",
        "cores_per_node",
        "float",
        None,
        "cores allocated per node when samples do not say",
        minimum=1.0,
        optional=True,
    ),
    Spec(
        "alert_hot_zone",
        "alerts",
        "hot_zone",
        "float",
        93.0,
        "hot zone: DFS write load above this (MB/s; seed 003's 98 - 5 MB/s IOR example)",
        minimum=0.0,
    ),
    Spec(
        "alert_hot_zone_fs",
        "alerts",
        "hot_zone_fs",
        "rates",
        None,
        "hot zone per file system: FS=RATE[,FS=RATE...] (e.g. scratch=1.2GiB/s; a plain "
        "number is MB/s); the others use alerts.hot_zone (replay's --hot-zone-fs)",
        optional=True,
    ),
    Spec(
        "alert_hot_zone_minutes",
        "alerts",
        "hot_zone_minutes",
        "int",
        5,
        "hot zone alert: after this many consecutive minutes above the threshold",
        minimum=1,
        maximum=100000,
    ),
    Spec(
        "section_nodes",
        "jobs",
        "section_nodes",
        "int",
        None,
        "capability section (nodes) for live CUP40 (seed 004); unset: accounting.nodes; "
        "neither: no live capability",
        minimum=1,
        maximum=2**31 - 1,
        optional=True,
    ),
    Spec(
        "backfill_flags",
        "jobs",
        "backfill_flags",
        "choice",
        "no",
        "yes when the job events carry backfill flags (sacct Flags, Moab): the modified CUP",
        choices=("no", "yes"),
    ),
    Spec(
        "adjust_out",
        "jobs",
        "adjust_out",
        "path",
        None,
        "file for a scheduler's fair-share hook: holder -> short-job penalty (seed 002), "
        "re-written atomically at each 3-minute tick",
        optional=True,
    ),
    Spec(
        "alert_shortjob_flood",
        "alerts",
        "shortjob_flood",
        "float",
        3600.0,
        "short-job flood: A(t) of a user or group above this (slot-seconds; calibrate yours)",
        minimum=0.0,
    ),
    Spec(
        "alert_overrun_margin",
        "alerts",
        "overrun_margin",
        "float",
        60.0,
        "overrun: a job still running this many seconds past its upper estimate (seed 001)",
        minimum=0.0,
    ),
    Spec(
        "alert_sliding_node_hours",
        "alerts",
        "sliding_node_hours",
        "float",
        100.0,
        "sliding job: a job never seen running whose drain reaches this many node-hours",
        minimum=0.0,
    ),
    Spec(
        "alert_sliding_top_k",
        "alerts",
        "sliding_top_k",
        "int",
        5,
        "sliding-rank alert: the K queued jobs with the most drain per node (seed 000 "
        "§V-A.2) with at least alerts.sliding_rank_node_hours; resolved past rank 2K; 0: off",
        minimum=0,
        maximum=10_000,
    ),
    Spec(
        "alert_sliding_rank_node_hours",
        "alerts",
        "sliding_rank_node_hours",
        "float",
        1.0,
        "sliding-rank alert: least drain (node-hours) for a queued job to be ranked",
        minimum=0.0,
    ),
    Spec(
        "size_groups",
        "jobs",
        "size_groups",
        "choice",
        "auto",
        "live drain by size group (seed 000 §V-D): absolute (the seed's sizes), relative "
        "(scaled to accounting.nodes) or auto (relative below 5,000 nodes), as replay's "
        "--size-groups",
        choices=("auto", "absolute", "relative"),
    ),
    Spec(
        "alert_sliding_quiet",
        "alerts",
        "sliding_quiet",
        "float",
        3600.0,
        "sliding job resolved when no node has been held for it this long (s, event time)",
        minimum=0.0,
    ),
    Spec(
        "alert_stalled_after",
        "alerts",
        "stalled_after",
        "float",
        300.0,
        "stalled pipeline: no input on a topic for this many seconds of the worker's clock "
        "(0: off)",
        minimum=0.0,
    ),
    Spec(
        "alert_ftl_node_hours",
        "alerts",
        "ftl_node_hours",
        "float",
        10.0,
        "failure to launch: a job drained for at least this many node-hours, then ran < 30 s",
        minimum=0.0,
    ),
    Spec(
        "alert_cup40_target",
        "alerts",
        "cup40_target",
        "float",
        0.80,
        "capability: a day's CUP40 below this (seed 004's goal)",
        minimum=0.0,
        maximum=1.0,
    ),
    Spec(
        "mmap_threshold",
        "worker",
        "mmap_threshold",
        "int",
        256,
        "KiB above which the worker's memory is mmapped, so freed arrays leave the process "
        "(glibc); 0: glibc's own threshold (a quarter more records/s, a quarter more memory)",
        minimum=0,
        maximum=32768,
    ),
    Spec(
        "connect_timeout",
        "worker",
        "connect_timeout",
        "float",
        120.0,
        "give up (one-line error, exit 1) when Kafka or InfluxDB stays unreachable this long",
        minimum=1.0,
        maximum=1e6,
    ),
    Spec(
        "broker_session_timeout",
        "worker",
        "broker_session_timeout",
        "float",
        60.0,
        "consumer group session timeout (s); shorter (e.g. 10) joins faster locally",
        minimum=1.0,
        maximum=1e6,
    ),
    Spec(
        "broker_heartbeat_interval",
        "worker",
        "broker_heartbeat_interval",
        "float",
        3.0,
        "consumer heartbeat interval (s); < session timeout / 3",
        minimum=0.1,
        maximum=1e6,
    ),
    Spec(
        "broker_rebalance_timeout",
        "worker",
        "broker_rebalance_timeout",
        "float",
        60.0,
        "consumer group rebalance timeout (s)",
        minimum=1.0,
        maximum=1e6,
    ),
)

_BY_NAME = {s.name: s for s in SPECS}


@dataclass(frozen=True, slots=True)
class Settings:
    """Effective configuration. Build it with :func:`load_settings`; see :data:`SPECS`."""

    kafka_bootstrap: str = "127.0.0.1:19092"
    kafka_security_protocol: str = "PLAINTEXT"
    kafka_sasl_mechanism: str = "PLAIN"
    kafka_sasl_username: str | None = None
    kafka_sasl_password: Secret | None = None
    kafka_ssl_cafile: Path | None = None
    kafka_ssl_certfile: Path | None = None
    kafka_ssl_keyfile: Path | None = None
    kafka_ssl_key_password: Secret | None = None
    topic_prefix: str = "drainwatch."
    topic_partitions: int = 8
    topic_replication_factor: int = 1
    influx_url: str = "http://127.0.0.1:18086"
    influx_org: str = "drainwatch"
    influx_bucket: str = "drainwatch"
    influx_database: str = "drainwatch"
    influx_token: Secret | None = None
    tz: str = "UTC"
    max_gap: float = 600.0
    nodes: int | None = None
    not_before: int = 0
    not_after: int = 4_102_444_800_000
    max_jump: float = 2_592_000.0
    reorder_window: float = 5.0
    max_line_bytes: int = 1_048_576
    max_hosts: int = 262_144
    max_snapshot_bytes: int = 268_435_456
    cluster: str = "default"
    state_dir: Path = Path(".drainwatch")
    log_level: str = "info"
    log_format: str = "text"
    store: str = "memory://"
    web_bind: str = "127.0.0.1"
    web_port: int = 6066
    lateness: float = 600.0
    message_max_bytes: int = 900_000
    marker_interval: float = 10.0
    shipper_timeout: float = 300.0
    checkpoint_interval: float = 5.0
    flush_interval: float = 2.0
    mmap_threshold: int = 256
    live_jobs: str = "off"
    live_samples: str = "off"
    sample_period: float = 60.0
    mem_per_core: float | None = None
    cores_per_node: float | None = None
    alert_hot_zone: float = 93.0
    alert_hot_zone_minutes: int = 5
    alert_hot_zone_fs: tuple[tuple[str, float], ...] | None = None
    section_nodes: int | None = None
    backfill_flags: str = "no"
    adjust_out: Path | None = None
    alert_shortjob_flood: float = 3600.0
    alert_overrun_margin: float = 60.0
    alert_cup40_target: float = 0.80
    alert_sliding_node_hours: float = 100.0
    alert_sliding_quiet: float = 3600.0
    alert_sliding_top_k: int = 5
    alert_sliding_rank_node_hours: float = 1.0
    size_groups: str = "auto"
    alert_stalled_after: float = 300.0
    alert_ftl_node_hours: float = 10.0
    connect_timeout: float = 120.0
    broker_session_timeout: float = 60.0
    broker_heartbeat_interval: float = 3.0
    broker_rebalance_timeout: float = 60.0

    # --- derived views -------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> list[str]:
        return [h.strip() for h in self.kafka_bootstrap.split(",") if h.strip()]

    @property
    def uses_ssl(self) -> bool:
        return self.kafka_security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.kafka_security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        """TLS context from the CA/cert/key files (aiokafka's helper; checks host names)."""
        if not self.uses_ssl:
            return None
        from aiokafka.helpers import create_ssl_context

        password = self.kafka_ssl_key_password
        ctx: ssl.SSLContext = create_ssl_context(
            cafile=self.kafka_ssl_cafile,
            certfile=self.kafka_ssl_certfile,
            keyfile=self.kafka_ssl_keyfile,
            password=password.reveal() if password is not None else None,
        )
        return ctx

    def aiokafka_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for AIOKafkaProducer/Consumer/AdminClient (servers + security)."""
        kw: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers,
            "security_protocol": self.kafka_security_protocol,
        }
        if self.uses_sasl:
            assert self.kafka_sasl_password is not None  # enforced by load_settings
            kw["sasl_mechanism"] = self.kafka_sasl_mechanism
            kw["sasl_plain_username"] = self.kafka_sasl_username
            kw["sasl_plain_password"] = self.kafka_sasl_password.reveal()
        if self.uses_ssl:
            kw["ssl_context"] = self.ssl_context()
        return kw

    def faust_kwargs(self) -> dict[str, Any]:
        """Broker URL and credentials for ``faust.App(**kwargs)``."""
        import faust

        kw: dict[str, Any] = {
            "broker": ";".join(f"kafka://{h}" for h in self.bootstrap_servers),
        }
        if self.uses_sasl:
            assert self.kafka_sasl_password is not None
            kw["broker_credentials"] = faust.SASLCredentials(
                username=self.kafka_sasl_username,
                password=self.kafka_sasl_password.reveal(),
                mechanism=self.kafka_sasl_mechanism,
                ssl_context=self.ssl_context(),  # None for SASL_PLAINTEXT
            )
        elif self.uses_ssl:
            kw["broker_credentials"] = faust.SSLCredentials(self.ssl_context())
        return kw

    def describe(self) -> dict[str, str]:
        """Setting -> printable value, secrets and URL credentials masked: safe to log."""
        out: dict[str, str] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = "" if v is None else logs.mask(str(v))
        return out

    def __repr__(self) -> str:
        """Masked like :meth:`describe`: a repr in a traceback or log shows no credential."""
        inner = ", ".join(
            f"{f.name}={logs.mask(repr(getattr(self, f.name)))}" for f in fields(self)
        )
        return f"Settings({inner})"


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
    return _validate(Settings(**values))


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
    spec = _BY_NAME
    if s.uses_sasl:
        if not s.kafka_sasl_username:
            raise ConfigError(
                spec["kafka_sasl_username"].env,
                f"required with security protocol {s.kafka_security_protocol}",
            )
        if s.kafka_sasl_password is None:
            raise ConfigError(
                spec["kafka_sasl_password"].env,
                f"required with security protocol {s.kafka_security_protocol} "
                f"(or {spec['kafka_sasl_password'].env}_FILE)",
            )
    if not s.uses_ssl:
        for name in (
            "kafka_ssl_cafile",
            "kafka_ssl_certfile",
            "kafka_ssl_keyfile",
            "kafka_ssl_key_password",
        ):
            if getattr(s, name) is not None:
                raise ConfigError(
                    spec[name].env,
                    f"set but security protocol is {s.kafka_security_protocol} "
                    "(use SSL or SASL_SSL)",
                )
    if s.kafka_ssl_keyfile is not None and s.kafka_ssl_certfile is None:
        raise ConfigError(spec["kafka_ssl_keyfile"].env, "needs kafka_ssl_certfile too")
    if s.broker_heartbeat_interval * 3 > s.broker_session_timeout:
        raise ConfigError(
            spec["broker_heartbeat_interval"].env,
            f"{s.broker_heartbeat_interval:g} s must be at most a third of "
            f"broker_session_timeout ({s.broker_session_timeout:g} s)",
        )
    if not s.topic_prefix.replace(".", "").replace("-", "").replace("_", "").isalnum():
        raise ConfigError(
            spec["topic_prefix"].env,
            f"{s.topic_prefix!r}: topic names allow letters, digits, '.', '_', '-'",
        )
    if s.not_before >= s.not_after:
        raise ConfigError(spec["not_before"].env, "must be earlier than not_after")
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
        level = level or (settings.log_level if settings else "info")
        fmt = fmt or (settings.log_format if settings else "text")
    logs.setup(level, fmt, stream)
