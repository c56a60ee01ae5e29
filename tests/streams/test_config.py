"""Settings: precedence, secrets, Kafka security pass-through, clear errors."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import faust
import pytest
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

from streams.config import SPECS, ConfigError, Secret, Settings, load_settings, readme_table

TOKEN = "s3cr3t-t0ken-value-42"

# env name, TOML key, default (as written in TOML): the contract of every deployment's files
CONTRACT: list[tuple[str, str, object]] = [
    ("DRAINWATCH_KAFKA_BOOTSTRAP", "kafka.bootstrap", "127.0.0.1:19092"),
    ("DRAINWATCH_KAFKA_SECURITY_PROTOCOL", "kafka.security_protocol", "PLAINTEXT"),
    ("DRAINWATCH_KAFKA_SASL_MECHANISM", "kafka.sasl_mechanism", "PLAIN"),
    ("DRAINWATCH_KAFKA_SASL_USERNAME", "kafka.sasl_username", None),
    ("DRAINWATCH_KAFKA_SASL_PASSWORD", "kafka.sasl_password_file", None),
    ("DRAINWATCH_KAFKA_SSL_CAFILE", "kafka.ssl_cafile", None),
    ("DRAINWATCH_KAFKA_SSL_CERTFILE", "kafka.ssl_certfile", None),
    ("DRAINWATCH_KAFKA_SSL_KEYFILE", "kafka.ssl_keyfile", None),
    ("DRAINWATCH_KAFKA_SSL_KEY_PASSWORD", "kafka.ssl_key_password_file", None),
    ("DRAINWATCH_TOPIC_PREFIX", "kafka.topic_prefix", "drainwatch."),
    ("DRAINWATCH_TOPIC_PARTITIONS", "kafka.topic_partitions", 8),
    ("DRAINWATCH_TOPIC_REPLICATION_FACTOR", "kafka.topic_replication_factor", 1),
    ("DRAINWATCH_INFLUX_URL", "influx.url", "http://127.0.0.1:18086"),
    ("DRAINWATCH_INFLUX_ORG", "influx.org", "drainwatch"),
    ("DRAINWATCH_INFLUX_BUCKET", "influx.bucket", "drainwatch"),
    ("DRAINWATCH_INFLUX_DATABASE", "influx.database", "drainwatch"),
    ("DRAINWATCH_INFLUX_TOKEN", "influx.token_file", None),
    ("DRAINWATCH_TZ", "accounting.tz", "UTC"),
    ("DRAINWATCH_MAX_GAP", "accounting.max_gap", 600.0),
    ("DRAINWATCH_NODES", "accounting.nodes", None),
    ("DRAINWATCH_CLUSTER", "accounting.cluster", "default"),
    ("DRAINWATCH_NOT_BEFORE", "bounds.not_before", "1970-01-01T00:00:00Z"),
    ("DRAINWATCH_NOT_AFTER", "bounds.not_after", "2100-01-01T00:00:00Z"),
    ("DRAINWATCH_MAX_JUMP", "bounds.max_jump", 2_592_000.0),
    ("DRAINWATCH_REORDER_WINDOW", "bounds.reorder_window", 5.0),
    ("DRAINWATCH_MAX_LINE_BYTES", "bounds.max_line_bytes", 1_048_576),
    ("DRAINWATCH_MAX_HOSTS", "bounds.max_hosts", 262_144),
    ("DRAINWATCH_MAX_SNAPSHOT_BYTES", "bounds.max_snapshot_bytes", 268_435_456),
    ("DRAINWATCH_STATE_DIR", "state_dir", ".drainwatch"),
    ("DRAINWATCH_LOG_LEVEL", "log_level", "info"),
    ("DRAINWATCH_LOG_FORMAT", "log_format", "text"),
    ("DRAINWATCH_STORE", "worker.store", "memory://"),
    ("DRAINWATCH_WEB_BIND", "worker.web_bind", "127.0.0.1"),
    ("DRAINWATCH_WEB_PORT", "worker.web_port", 6066),
    ("DRAINWATCH_LATENESS", "worker.lateness", 600.0),
    ("DRAINWATCH_MESSAGE_MAX_BYTES", "kafka.message_max_bytes", 900_000),
    ("DRAINWATCH_MARKER_INTERVAL", "worker.marker_interval", 10.0),
    ("DRAINWATCH_SHIPPER_TIMEOUT", "worker.shipper_timeout", 300.0),
    ("DRAINWATCH_CHECKPOINT_INTERVAL", "worker.checkpoint_interval", 5.0),
    ("DRAINWATCH_FLUSH_INTERVAL", "worker.flush_interval", 2.0),
    ("DRAINWATCH_LIVE_JOBS", "worker.live_jobs", "off"),
    ("DRAINWATCH_LIVE_SAMPLES", "worker.live_samples", "off"),
    ("DRAINWATCH_SAMPLE_PERIOD", "samples.period", 60.0),
    ("DRAINWATCH_MEM_PER_CORE", "samples.mem_per_core", None),
    ("DRAINWATCH_CORES_PER_NODE", "samples.cores_per_node", None),
    ("DRAINWATCH_ALERT_HOT_ZONE", "alerts.hot_zone", 93.0),
    ("DRAINWATCH_ALERT_HOT_ZONE_FS", "alerts.hot_zone_fs", None),
    ("DRAINWATCH_ALERT_HOT_ZONE_MINUTES", "alerts.hot_zone_minutes", 5),
    ("DRAINWATCH_SECTION_NODES", "jobs.section_nodes", None),
    ("DRAINWATCH_BACKFILL_FLAGS", "jobs.backfill_flags", "no"),
    ("DRAINWATCH_ADJUST_OUT", "jobs.adjust_out", None),
    ("DRAINWATCH_ALERT_SHORTJOB_FLOOD", "alerts.shortjob_flood", 3600.0),
    ("DRAINWATCH_ALERT_OVERRUN_MARGIN", "alerts.overrun_margin", 60.0),
    ("DRAINWATCH_ALERT_SLIDING_NODE_HOURS", "alerts.sliding_node_hours", 100.0),
    ("DRAINWATCH_ALERT_SLIDING_TOP_K", "alerts.sliding_top_k", 5),
    ("DRAINWATCH_ALERT_SLIDING_RANK_NODE_HOURS", "alerts.sliding_rank_node_hours", 1.0),
    ("DRAINWATCH_SIZE_GROUPS", "jobs.size_groups", "auto"),
    ("DRAINWATCH_ALERT_SLIDING_QUIET", "alerts.sliding_quiet", 3600.0),
    ("DRAINWATCH_ALERT_STALLED_AFTER", "alerts.stalled_after", 300.0),
    ("DRAINWATCH_ALERT_FTL_NODE_HOURS", "alerts.ftl_node_hours", 10.0),
    ("DRAINWATCH_ALERT_CUP40_TARGET", "alerts.cup40_target", 0.8),
    ("DRAINWATCH_MMAP_THRESHOLD", "worker.mmap_threshold", 256),
    ("DRAINWATCH_CONNECT_TIMEOUT", "worker.connect_timeout", 120.0),
    ("DRAINWATCH_BROKER_SESSION_TIMEOUT", "worker.broker_session_timeout", 60.0),
    ("DRAINWATCH_BROKER_HEARTBEAT_INTERVAL", "worker.broker_heartbeat_interval", 3.0),
    ("DRAINWATCH_BROKER_REBALANCE_TIMEOUT", "worker.broker_rebalance_timeout", 60.0),
]
# env name -> kind, minimum, maximum, choices
CHECKS: dict[str, tuple[str, float | None, float | None, tuple[str, ...]]] = {
    "DRAINWATCH_KAFKA_BOOTSTRAP": ("bootstrap", None, None, ()),
    "DRAINWATCH_KAFKA_SECURITY_PROTOCOL": (
        "choice",
        None,
        None,
        ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
    ),
    "DRAINWATCH_KAFKA_SASL_MECHANISM": (
        "choice",
        None,
        None,
        ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
    ),
    "DRAINWATCH_KAFKA_SASL_USERNAME": ("str", None, None, ()),
    "DRAINWATCH_KAFKA_SASL_PASSWORD": ("secret", None, None, ()),
    "DRAINWATCH_KAFKA_SSL_CAFILE": ("file", None, None, ()),
    "DRAINWATCH_KAFKA_SSL_CERTFILE": ("file", None, None, ()),
    "DRAINWATCH_KAFKA_SSL_KEYFILE": ("file", None, None, ()),
    "DRAINWATCH_KAFKA_SSL_KEY_PASSWORD": ("secret", None, None, ()),
    "DRAINWATCH_TOPIC_PREFIX": ("str", None, None, ()),
    "DRAINWATCH_TOPIC_PARTITIONS": ("int", 1, None, ()),
    "DRAINWATCH_TOPIC_REPLICATION_FACTOR": ("int", 1, None, ()),
    "DRAINWATCH_INFLUX_URL": ("str", None, None, ()),
    "DRAINWATCH_INFLUX_ORG": ("str", None, None, ()),
    "DRAINWATCH_INFLUX_BUCKET": ("str", None, None, ()),
    "DRAINWATCH_INFLUX_DATABASE": ("str", None, None, ()),
    "DRAINWATCH_INFLUX_TOKEN": ("secret", None, None, ()),
    "DRAINWATCH_TZ": ("tz", None, None, ()),
    "DRAINWATCH_MAX_GAP": ("float", 0.001, 1e12, ()),
    "DRAINWATCH_NODES": ("int", 1, 2_147_483_647, ()),
    "DRAINWATCH_CLUSTER": ("str", None, None, ()),
    "DRAINWATCH_NOT_BEFORE": ("instant", None, None, ()),
    "DRAINWATCH_NOT_AFTER": ("instant", None, None, ()),
    "DRAINWATCH_MAX_JUMP": ("float", 0.0, 1e12, ()),
    "DRAINWATCH_REORDER_WINDOW": ("float", 0.0, 3600.0, ()),
    "DRAINWATCH_MAX_LINE_BYTES": ("int", 256, None, ()),
    "DRAINWATCH_MAX_HOSTS": ("int", 1, None, ()),
    "DRAINWATCH_MAX_SNAPSHOT_BYTES": ("int", 65_536, None, ()),
    "DRAINWATCH_STATE_DIR": ("path", None, None, ()),
    "DRAINWATCH_LOG_LEVEL": ("choice", None, None, ("debug", "info", "warning", "error")),
    "DRAINWATCH_LOG_FORMAT": ("choice", None, None, ("text", "json")),
    "DRAINWATCH_STORE": ("choice", None, None, ("memory://", "rocksdb://")),
    "DRAINWATCH_WEB_BIND": ("str", None, None, ()),
    "DRAINWATCH_WEB_PORT": ("int", 1, 65_535, ()),
    "DRAINWATCH_LATENESS": ("float", 0.0, 1e6, ()),
    "DRAINWATCH_MESSAGE_MAX_BYTES": ("int", 65_536, 1_000_000, ()),
    "DRAINWATCH_MARKER_INTERVAL": ("float", 0.1, 86_400.0, ()),
    "DRAINWATCH_SHIPPER_TIMEOUT": ("float", 1.0, 1e7, ()),
    "DRAINWATCH_CHECKPOINT_INTERVAL": ("float", 0.1, 1e6, ()),
    "DRAINWATCH_FLUSH_INTERVAL": ("float", 0.1, 1e6, ()),
    "DRAINWATCH_LIVE_JOBS": ("choice", None, None, ("off", "on")),
    "DRAINWATCH_LIVE_SAMPLES": ("choice", None, None, ("off", "on")),
    "DRAINWATCH_SAMPLE_PERIOD": ("float", 0.001, 86_400.0, ()),
    "DRAINWATCH_MEM_PER_CORE": ("float", 0.001, None, ()),
    "DRAINWATCH_CORES_PER_NODE": ("float", 1.0, None, ()),
    "DRAINWATCH_ALERT_HOT_ZONE": ("float", 0.0, None, ()),
    "DRAINWATCH_ALERT_HOT_ZONE_FS": ("rates", None, None, ()),
    "DRAINWATCH_ALERT_HOT_ZONE_MINUTES": ("int", 1, 100_000, ()),
    "DRAINWATCH_SECTION_NODES": ("int", 1, 2_147_483_647, ()),
    "DRAINWATCH_BACKFILL_FLAGS": ("choice", None, None, ("no", "yes")),
    "DRAINWATCH_ADJUST_OUT": ("path", None, None, ()),
    "DRAINWATCH_ALERT_SHORTJOB_FLOOD": ("float", 0.0, None, ()),
    "DRAINWATCH_ALERT_OVERRUN_MARGIN": ("float", 0.0, None, ()),
    "DRAINWATCH_ALERT_SLIDING_NODE_HOURS": ("float", 0.0, None, ()),
    "DRAINWATCH_ALERT_SLIDING_TOP_K": ("int", 0, 10_000, ()),
    "DRAINWATCH_ALERT_SLIDING_RANK_NODE_HOURS": ("float", 0.0, None, ()),
    "DRAINWATCH_SIZE_GROUPS": ("choice", None, None, ("auto", "absolute", "relative")),
    "DRAINWATCH_ALERT_SLIDING_QUIET": ("float", 0.0, None, ()),
    "DRAINWATCH_ALERT_STALLED_AFTER": ("float", 0.0, None, ()),
    "DRAINWATCH_ALERT_FTL_NODE_HOURS": ("float", 0.0, None, ()),
    "DRAINWATCH_ALERT_CUP40_TARGET": ("float", 0.0, 1.0, ()),
    "DRAINWATCH_MMAP_THRESHOLD": ("int", 0, 32_768, ()),
    "DRAINWATCH_CONNECT_TIMEOUT": ("float", 1.0, 1e6, ()),
    "DRAINWATCH_BROKER_SESSION_TIMEOUT": ("float", 1.0, 1e6, ()),
    "DRAINWATCH_BROKER_HEARTBEAT_INTERVAL": ("float", 0.1, 1e6, ()),
    "DRAINWATCH_BROKER_REBALANCE_TIMEOUT": ("float", 1.0, 1e6, ()),
}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A real CA and a client certificate it signed, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not installed: cannot make a test CA")
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def ossl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    ossl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=drainwatch test CA",
    )
    ossl("req", *ec, "-keyout", "client.key", "-out", "client.csr", "-subj", "/CN=client")
    ossl(
        "x509",
        "-req",
        "-in",
        "client.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "client.pem",
        "-days",
        "2",
    )
    ossl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "other.key",
        "-out",
        "other.pem",
        "-days",
        "2",
        "-subj",
        "/CN=other",
    )
    return {n: d / f"{n}" for n in ("ca.pem", "client.pem", "client.key", "other.key")}


# --- defaults and precedence -----------------------------------------------------------------


def test_env_names_toml_keys_and_defaults_are_the_contract() -> None:
    """Deployments' env files, units and TOML files name these: a setting keeps its
    environment variable, TOML key, default, kind and bounds (a new setting adds a row)."""
    assert {s.env: (s.toml_key, s.default) for s in SPECS} == {
        env: (key, default) for env, key, default in CONTRACT
    }
    assert {s.env: (s.kind, s.minimum, s.maximum, s.choices) for s in SPECS} == CHECKS
    for s in SPECS:
        assert s.name == s.env.removeprefix("DRAINWATCH_").lower()  # describe()'s key
        assert s.toml_key.removesuffix("_file") == f"{s.section}.{s.key}".removeprefix(".")
        assert s.optional == (s.default is None)


def test_defaults_load_and_every_env_name_is_read() -> None:
    s = load_settings(env={})
    assert s == Settings()
    assert s.kafka.bootstrap == "127.0.0.1:19092"
    assert s.kafka.topic_prefix == "drainwatch."
    assert s.accounting.tz == "UTC" and s.accounting.max_gap == 600.0 and s.accounting.nodes is None
    assert Settings().bounds.not_after == 4_102_444_800_000 and Settings().bounds.not_before == 0
    for spec in SPECS:  # each variable, set to its default (or empty: unset), is a setting
        if spec.kind != "secret":
            text = "" if spec.default is None else str(spec.default)
            assert load_settings(env={spec.env: text}) == Settings(), spec.env


def test_readme_table_is_made_from_the_declarations() -> None:
    text = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    assert readme_table() in text, (
        "README.md's table is stale: python -m streams.config --write-docs"
    )


def test_precedence_defaults_toml_env(tmp_path: Path) -> None:
    cfg = write(
        tmp_path / "dw.toml",
        """
state_dir = "state"
[kafka]
bootstrap = "k1:9092,k2:9092"
topic_prefix = "site."
[accounting]
tz = "America/Chicago"
nodes = 26846
[worker]
web_port = 7000
""",
    )
    s = load_settings(cfg, env={"DRAINWATCH_WEB_PORT": "7100", "DRAINWATCH_NODES": "100"})
    assert s.kafka.bootstrap == "k1:9092,k2:9092"  # TOML
    assert s.bootstrap_servers == ["k1:9092", "k2:9092"]
    assert s.kafka.topic_prefix == "site."  # TOML
    assert s.accounting.tz == "America/Chicago"  # TOML
    assert s.worker.web_port == 7100  # env beats TOML
    assert s.accounting.nodes == 100  # env beats TOML
    assert s.accounting.max_gap == 600.0  # default
    assert s.general.state_dir == tmp_path / "state"  # relative to the TOML file's folder


def test_config_path_from_env_and_argument_wins(tmp_path: Path) -> None:
    a = write(tmp_path / "a.toml", "[accounting]\nmax_gap = 300\n")
    b = write(tmp_path / "b.toml", "[accounting]\nmax_gap = 120.5\n")
    assert load_settings(env={"DRAINWATCH_CONFIG": str(a)}).accounting.max_gap == 300.0
    assert load_settings(b, env={"DRAINWATCH_CONFIG": str(a)}).accounting.max_gap == 120.5


def test_empty_env_value_unsets_optional_setting(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.toml", "[accounting]\nnodes = 64\n")
    assert load_settings(cfg, env={"DRAINWATCH_NODES": ""}).accounting.nodes is None


def test_non_setting_drainwatch_variables_are_allowed() -> None:
    s = load_settings(env={"DRAINWATCH_REQUIRE_STACK": "1", "DRAINWATCH_STACK_DIR": "/x"})
    assert s == Settings()


# --- secrets ---------------------------------------------------------------------------------


def test_token_from_env_file_and_toml_file(tmp_path: Path) -> None:
    tok = write(tmp_path / "token", TOKEN + "\n")
    s = load_settings(env={"DRAINWATCH_INFLUX_TOKEN_FILE": str(tok)})
    assert s.influx.token is not None and s.influx.token.reveal() == TOKEN
    cfg = write(tmp_path / "dw.toml", '[influx]\ntoken_file = "token"\n')
    assert load_settings(cfg, env={}).influx.token.reveal() == TOKEN
    s = load_settings(cfg, env={"DRAINWATCH_INFLUX_TOKEN": "from-env"})
    assert s.influx.token.reveal() == "from-env"


def test_token_never_in_repr_str_or_describe(tmp_path: Path) -> None:
    pw = write(tmp_path / "pw", "kafka-pass-xyz")
    s = load_settings(
        env={
            "DRAINWATCH_INFLUX_TOKEN": TOKEN,
            "DRAINWATCH_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "DRAINWATCH_KAFKA_SASL_USERNAME": "dw",
            "DRAINWATCH_KAFKA_SASL_PASSWORD_FILE": str(pw),
        }
    )
    for text in (repr(s), str(s), repr(s.describe()), str(s.influx.token), f"{s.influx.token}"):
        assert TOKEN not in text and "kafka-pass-xyz" not in text
    assert "'***'" in repr(s)
    assert s.describe()["influx_token"] == "'***'"
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(s.influx.token)
    assert Secret("a") == Secret("a") and Secret("a") != Secret("b")


def test_secret_value_inline_in_toml_is_refused(tmp_path: Path) -> None:
    cfg = write(tmp_path / "dw.toml", f'[influx]\ntoken = "{TOKEN}"\n')
    with pytest.raises(ConfigError) as e:
        load_settings(cfg, env={})
    assert e.value.key.startswith("influx.token")
    assert "influx.token_file" in str(e.value)
    assert TOKEN not in str(e.value)


def test_secret_env_and_file_both_set_is_ambiguous(tmp_path: Path) -> None:
    tok = write(tmp_path / "token", TOKEN)
    with pytest.raises(ConfigError, match="DRAINWATCH_INFLUX_TOKEN"):
        load_settings(
            env={"DRAINWATCH_INFLUX_TOKEN": "x", "DRAINWATCH_INFLUX_TOKEN_FILE": str(tok)}
        )


def test_missing_or_empty_token_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_settings(env={"DRAINWATCH_INFLUX_TOKEN_FILE": str(tmp_path / "nope")})
    assert e.value.key == "DRAINWATCH_INFLUX_TOKEN_FILE" and "cannot read" in str(e.value)
    empty = write(tmp_path / "empty", "\n")
    with pytest.raises(ConfigError, match="empty"):
        load_settings(env={"DRAINWATCH_INFLUX_TOKEN_FILE": str(empty)})


# --- Kafka security pass-through ---------------------------------------------------------------


def test_plaintext_kwargs() -> None:
    s = load_settings(env={"DRAINWATCH_KAFKA_BOOTSTRAP": "a:1, b:2"})
    assert s.aiokafka_kwargs() == {
        "bootstrap_servers": ["a:1", "b:2"],
        "security_protocol": "PLAINTEXT",
    }
    assert s.faust_kwargs() == {"broker": "kafka://a:1;kafka://b:2"}


def test_sasl_ssl_scram_maps_to_aiokafka_and_faust(tmp_path: Path, pki: dict[str, Path]) -> None:
    pw = write(tmp_path / "pw", "scram-pass\n")
    s = load_settings(
        env={
            "DRAINWATCH_KAFKA_BOOTSTRAP": "broker.example:9093",
            "DRAINWATCH_KAFKA_SECURITY_PROTOCOL": "sasl_ssl",
            "DRAINWATCH_KAFKA_SASL_MECHANISM": "scram-sha-512",
            "DRAINWATCH_KAFKA_SASL_USERNAME": "drainwatch",
            "DRAINWATCH_KAFKA_SASL_PASSWORD_FILE": str(pw),
            "DRAINWATCH_KAFKA_SSL_CAFILE": str(pki["ca.pem"]),
        }
    )
    kw = s.aiokafka_kwargs()
    ctx = kw.pop("ssl_context")
    assert kw == {
        "bootstrap_servers": ["broker.example:9093"],
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "drainwatch",
        "sasl_plain_password": "scram-pass",
    }
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    subjects = [dict(x[0] for x in c["subject"]) for c in ctx.get_ca_certs()]
    assert {"commonName": "drainwatch test CA"} in subjects

    fk = s.faust_kwargs()
    creds = fk["broker_credentials"]
    assert fk["broker"] == "kafka://broker.example:9093"
    assert isinstance(creds, faust.SASLCredentials)
    assert creds.mechanism.value == "SCRAM-SHA-512" and creds.protocol.value == "SASL_SSL"
    assert "scram-pass" not in repr(creds)
    # Faust turns its credentials into the same aiokafka arguments we give aiokafka directly.
    auth = credentials_to_aiokafka_auth(creds)
    assert auth.pop("ssl_context").get_ca_certs() == ctx.get_ca_certs()
    assert auth == {k: v for k, v in kw.items() if k != "bootstrap_servers"}


def test_sasl_plaintext_has_no_ssl_context(tmp_path: Path) -> None:
    s = load_settings(
        env={
            "DRAINWATCH_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "DRAINWATCH_KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
            "DRAINWATCH_KAFKA_SASL_USERNAME": "u",
            "DRAINWATCH_KAFKA_SASL_PASSWORD": "p",
        }
    )
    assert "ssl_context" not in s.aiokafka_kwargs()
    creds = s.faust_kwargs()["broker_credentials"]
    assert creds.protocol.value == "SASL_PLAINTEXT" and creds.ssl_context is None
    assert creds.mechanism.value == "SCRAM-SHA-256"


def test_mutual_tls_from_toml(tmp_path: Path, pki: dict[str, Path]) -> None:
    cfg = write(
        tmp_path / "dw.toml",
        f"""
[kafka]
security_protocol = "SSL"
ssl_cafile = "{pki["ca.pem"]}"
ssl_certfile = "{pki["client.pem"]}"
ssl_keyfile = "{pki["client.key"]}"
""",
    )
    s = load_settings(cfg, env={})
    kw = s.aiokafka_kwargs()
    assert kw["security_protocol"] == "SSL" and isinstance(kw["ssl_context"], ssl.SSLContext)
    creds = s.faust_kwargs()["broker_credentials"]
    assert isinstance(creds, faust.SSLCredentials)
    assert credentials_to_aiokafka_auth(creds)["security_protocol"] == "SSL"
    # The key really is loaded: a key that does not match the certificate is refused.
    bad = load_settings(cfg, env={"DRAINWATCH_KAFKA_SSL_KEYFILE": str(pki["other.key"])})
    with pytest.raises(ssl.SSLError):
        bad.aiokafka_kwargs()


# --- errors name the key ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "key", "fragment"),
    [
        ({"DRAINWATCH_MAX_GAP": "ten"}, "DRAINWATCH_MAX_GAP", "not a number"),
        ({"DRAINWATCH_MAX_GAP": "-1"}, "DRAINWATCH_MAX_GAP", "minimum"),
        ({"DRAINWATCH_MAX_GAP": "nan"}, "DRAINWATCH_MAX_GAP", "finite"),
        ({"DRAINWATCH_NODES": "2.5"}, "DRAINWATCH_NODES", "integer"),
        ({"DRAINWATCH_TZ": "Mars/Olympus"}, "DRAINWATCH_TZ", "IANA"),
        (
            {"DRAINWATCH_KAFKA_SECURITY_PROTOCOL": "TLS"},
            "DRAINWATCH_KAFKA_SECURITY_PROTOCOL",
            "SASL_SSL",
        ),
        (
            {"DRAINWATCH_KAFKA_SASL_MECHANISM": "GSSAPI"},
            "DRAINWATCH_KAFKA_SASL_MECHANISM",
            "SCRAM-SHA-512",
        ),
        ({"DRAINWATCH_KAFKA_BOOTSTRAP": "kafka://h:9092"}, "DRAINWATCH_KAFKA_BOOTSTRAP", "scheme"),
        ({"DRAINWATCH_KAFKA_BOOTSTRAP": "h:99999"}, "DRAINWATCH_KAFKA_BOOTSTRAP", "host:port"),
        (
            {"DRAINWATCH_KAFKA_BOOTSTRAPS": "h:1"},
            "DRAINWATCH_KAFKA_BOOTSTRAPS",
            "did you mean DRAINWATCH_KAFKA_BOOTSTRAP",
        ),
        ({"DRAINWATCH_STORE": "redis://"}, "DRAINWATCH_STORE", "memory://"),
        (
            {"DRAINWATCH_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"},
            "DRAINWATCH_KAFKA_SASL_USERNAME",
            "required",
        ),
        (
            {
                "DRAINWATCH_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                "DRAINWATCH_KAFKA_SASL_USERNAME": "u",
            },
            "DRAINWATCH_KAFKA_SASL_PASSWORD",
            "required",
        ),
        (
            {"DRAINWATCH_KAFKA_SSL_CAFILE": "/etc/hostname"},
            "DRAINWATCH_KAFKA_SSL_CAFILE",
            "PLAINTEXT",
        ),
        (
            {
                "DRAINWATCH_KAFKA_SECURITY_PROTOCOL": "SSL",
                "DRAINWATCH_KAFKA_SSL_CAFILE": "/no/such/ca.pem",
            },
            "DRAINWATCH_KAFKA_SSL_CAFILE",
            "does not exist",
        ),
        (
            {"DRAINWATCH_BROKER_SESSION_TIMEOUT": "6"},
            "DRAINWATCH_BROKER_HEARTBEAT_INTERVAL",
            "third",
        ),
        ({"DRAINWATCH_TOPIC_PREFIX": "bad prefix/"}, "DRAINWATCH_TOPIC_PREFIX", "topic names"),
    ],
)
def test_bad_env_values_name_the_key(env: dict[str, str], key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_settings(env=env)
    assert e.value.key == key
    assert str(e.value).startswith(key) and fragment in str(e.value)


@pytest.mark.parametrize(
    ("toml", "key", "fragment"),
    [
        ('[worker]\nweb_port = "x"\n', "worker.web_port", "not an integer"),
        ("[worker]\nweb_prot = 1\n", "worker.web_prot", "did you mean worker.web_port"),
        ("[kafka]\nbootstrap = 9092\n", "kafka.bootstrap", "expected a string"),
        ("[accounting]\nnodes = true\n", "accounting.nodes", "expected a number"),
        ("[accounting\n", "config file", "not valid TOML"),
    ],
)
def test_bad_toml_values_name_the_key(tmp_path: Path, toml: str, key: str, fragment: str) -> None:
    cfg = write(tmp_path / "dw.toml", toml)
    with pytest.raises(ConfigError) as e:
        load_settings(cfg, env={})
    assert e.value.key.startswith(key) and fragment in str(e.value)


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml", env={})


def test_hot_zone_fs_thresholds_parse_to_mb_s_and_refuse_bad_items() -> None:
    s = load_settings(None, env={"DRAINWATCH_ALERT_HOT_ZONE_FS": "scratch=1.2GiB/s, home=500"})
    assert s.alerts.hot_zone_fs == (("scratch", 1.2 * 2**30 / 1e6), ("home", 500.0))
    assert load_settings(None, env={}).alerts.hot_zone_fs is None
    for bad, why in (
        ("scratch", "expected FS=RATE"),
        ("a=1,a=2", "already"),
        ("a=12Mb/s", "a=12Mb/s"),
    ):
        with pytest.raises(ConfigError, match=why) as e:
            load_settings(None, env={"DRAINWATCH_ALERT_HOT_ZONE_FS": bad})
        assert e.value.key == "DRAINWATCH_ALERT_HOT_ZONE_FS"


@pytest.mark.parametrize("name", ["DRAINWATCH_LIVE_JOBS", "DRAINWATCH_LIVE_SAMPLES"])
def test_a_live_family_switch_is_on_or_off_nothing_else(name: str) -> None:
    """``ON`` and ``yes`` once read as off without a word: now ``ON`` is on (a choice's case is
    not its meaning) and anything but on or off is a ConfigError naming the variable."""
    key = name.removeprefix("DRAINWATCH_").lower()
    assert load_settings(env={name: "on"}).value(key) == "on"
    assert load_settings(env={name: " ON "}).value(key) == "on"
    for bad in ("yes", "1", "true"):
        with pytest.raises(ConfigError, match=name):
            load_settings(env={name: bad})
