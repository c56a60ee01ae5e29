"""The settings, one frozen dataclass per TOML section, each field declared once with
:func:`~streams.config.declare.setting` (default, env name, kind, bounds, help)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streams.config.declare import (
    LOG_FORMATS,
    LOG_LEVELS,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    STORES,
    Secret,
    Section,
    setting,
)


@dataclass(frozen=True, slots=True, repr=False)
class GeneralSettings(Section):
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
class KafkaSettings(Section):
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
class InfluxSettings(Section):
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
class AccountingSettings(Section):
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
class BoundsSettings(Section):
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
class WorkerSettings(Section):
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
        kind="choice",
        choices=("off", "on"),
        help="job-events analytics in the worker: off, or on (every job analytic, its alerts; "
        "docs/state.md)",
    )
    live_samples: str = setting(
        "off",
        env="DRAINWATCH_LIVE_SAMPLES",
        kind="choice",
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
class SamplesSettings(Section):
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
class JobsSettings(Section):
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
class AlertsSettings(Section):
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
