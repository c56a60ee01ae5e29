#!/usr/bin/env python3
"""The local stack: a real Apache Kafka broker, a real InfluxDB and a real Grafana, on 127.0.0.1,
without Docker.

    python deploy/local/stack.py start                  # build what is missing, start, wait healthy
    python deploy/local/stack.py status                 # exit 0 when every server answers
    python deploy/local/stack.py stop [--keep-logs-if RC]

* Kafka 3.9 (KRaft, one combined broker+controller node). Its jars are resolved once with Maven
  from deploy/local/kafka/pom.xml into the state directory; storage is formatted once with
  kafka.tools.StorageTool; the broker is `java -cp lib/* kafka.Kafka server.properties`.
* InfluxDB 1.8.10, built once with `go install` from the Go module proxy. It serves the v2 write
  API (/api/v2/write), Flux (/api/v2/query) and InfluxQL (/query). Auth is on; an admin user with
  a random password is created on first start, and the database the pipeline writes to.
* Grafana 10.0.0-preview, built once from the Go module proxy (`go mod download`, `wire gen`,
  `go build`, ~4 min on 2 cores; the module has no frontend bundle: deploy/local/grafana_ui.py
  builds the web UI beside it, `make grafana-ui`, also run by `make test`, and a server started
  after it serves the UI; without it the HTTP API is complete and the page blank), run with
  sqlite, unified alerting on, an admin password generated into grafana/admin.password (0600)
  and the repo's provisioning files (grafana/provisioning: datasource, dashboards, alerting)
  with the datasource pointing at this InfluxDB through DRAINWATCH_GRAFANA_* variables.

Everything lives under the state directory (DRAINWATCH_STATE_DIR, default <repo>/.drainwatch):
kafka/{lib,data,server.properties}, influxdb/{bin,meta,data,wal,influxdb.conf,admin.token,
write.token,read.token}, grafana/{bin,home,run,admin.password}, logs/ (kept after every run,
build logs too) and stack.env (KEY=VALUE lines for clients).

InfluxDB's tokens (``user:password``, files of mode 0600): admin.token (every privilege: the
bootstrap, tests that make databases), write.token (WRITE on the database only: a worker) and
read.token (READ only: the stack's Grafana). Grafana starts after InfluxDB's bootstrap wrote
them: it reads its token once, when it provisions its datasource.

Standard library only: it runs before the virtualenv has anything installed. Its progress and
errors are log lines on stderr in drainwatch's format (streams/logs.py, which it cannot import):
``2026-11-26T18:02:06.123Z INFO stack: message``, or JSON objects with ``--log-format json``.
Other code (the pytest fixtures) imports it as a module: see start(), stop(), health(),
restart_kafka(), read_stack_env(), influx_query(), and for a Grafana of a test's own
grafana_provisioning(), start_grafana_instance(), grafana_request(), stop_grafana_instance().
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import http.client
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
KAFKA_POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
INFLUXDB_MODULE = "github.com/influxdata/influxdb/cmd/influxd"
INFLUXDB_VERSION = "v1.8.10"
DATABASE = "drainwatch"
RETENTION_POLICY = "autogen"
ADMIN_USER = "drainwatch_admin"
# The scoped accounts beside the admin: the worker's token may only write the database, Grafana's
# only read it (InfluxDB 1.8 tokens are "user:password" of a user with that one privilege).
WRITER_USER = "drainwatch_writer"
READER_USER = "drainwatch_reader"
LOG_ROTATE_BYTES = 20 * 1024 * 1024

# Process handles of servers started by this interpreter, kept so they are reaped (no zombies,
# no "subprocess still running" warnings) when a long-lived caller such as pytest starts them.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class StackError(RuntimeError):
    """The stack could not be built, started or reached; the message says why and where to look."""


@dataclass(frozen=True, slots=True)
class Config:
    """Ports and paths of the local stack, from DRAINWATCH_* environment variables."""

    state: Path
    kafka_port: int
    controller_port: int
    influx_port: int
    influx_rpc_port: int
    grafana_port: int
    grafana_ha_port: int
    timeout: float

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Config:
        env = dict(os.environ if env is None else env)
        state = Path(env.get("DRAINWATCH_STATE_DIR") or REPO / ".drainwatch").resolve()
        return cls(
            state=state,
            kafka_port=int(env.get("DRAINWATCH_KAFKA_PORT", "19092")),
            controller_port=int(env.get("DRAINWATCH_KAFKA_CONTROLLER_PORT", "19093")),
            influx_port=int(env.get("DRAINWATCH_INFLUX_PORT", "18086")),
            influx_rpc_port=int(env.get("DRAINWATCH_INFLUX_RPC_PORT", "18088")),
            grafana_port=int(env.get("DRAINWATCH_GRAFANA_PORT", "13000")),
            grafana_ha_port=int(env.get("DRAINWATCH_GRAFANA_HA_PORT", "13094")),
            timeout=float(env.get("DRAINWATCH_STACK_TIMEOUT", "180")),
        )

    # --- layout -----------------------------------------------------------------------------
    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def kafka_dir(self) -> Path:
        return self.state / "kafka"

    @property
    def kafka_lib(self) -> Path:
        return self.kafka_dir / "lib"

    @property
    def kafka_data(self) -> Path:
        return self.kafka_dir / "data"

    @property
    def kafka_properties(self) -> Path:
        return self.kafka_dir / "server.properties"

    @property
    def kafka_log4j(self) -> Path:
        return self.kafka_dir / "log4j.properties"

    @property
    def kafka_cluster_id_file(self) -> Path:
        return self.kafka_dir / "cluster.id"

    @property
    def kafka_pid(self) -> Path:
        return self.kafka_dir / "kafka.pid"

    @property
    def kafka_log(self) -> Path:
        return self.logs / "kafka.log"

    @property
    def influx_dir(self) -> Path:
        return self.state / "influxdb"

    @property
    def influxd(self) -> Path:
        return self.influx_dir / "bin" / "influxd"

    @property
    def influx_conf(self) -> Path:
        return self.influx_dir / "influxdb.conf"

    @property
    def influx_pid(self) -> Path:
        return self.influx_dir / "influxd.pid"

    @property
    def influx_token_file(self) -> Path:
        return self.influx_dir / "admin.token"

    @property
    def influx_write_token_file(self) -> Path:
        return self.influx_dir / "write.token"

    @property
    def influx_read_token_file(self) -> Path:
        return self.influx_dir / "read.token"

    @property
    def influx_log(self) -> Path:
        return self.logs / "influxdb.log"

    @property
    def grafana_dir(self) -> Path:
        return self.state / "grafana"

    @property
    def grafana_bin(self) -> Path:
        return self.grafana_dir / "bin" / "grafana"

    @property
    def grafana_home(self) -> Path:
        return self.grafana_dir / "home"

    @property
    def grafana_run(self) -> Path:
        return self.grafana_dir / "run"

    @property
    def grafana_password_file(self) -> Path:
        return self.grafana_dir / "admin.password"

    @property
    def grafana_log(self) -> Path:
        return self.logs / "grafana.log"

    @property
    def stack_env(self) -> Path:
        return self.state / "stack.env"

    # --- addresses --------------------------------------------------------------------------
    @property
    def kafka_bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def influx_url(self) -> str:
        return f"http://127.0.0.1:{self.influx_port}"

    @property
    def grafana_url(self) -> str:
        return f"http://127.0.0.1:{self.grafana_port}"


LOG_FORMATS = ("text", "json")
_log = logging.getLogger("drainwatch.stack")
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://)([^@/\s?#:]*):[^@/\s?#]*@")


class LineFormatter(logging.Formatter):
    """drainwatch's log line: ``<ISO 8601 UTC ms>Z LEVEL component: message`` (text) or one
    JSON object ``{"time", "level", "component", "message"[, "exc"]}``; URL passwords masked."""

    def __init__(self, fmt: str = "text") -> None:
        super().__init__()
        self.fmt = fmt

    def format(self, record: logging.LogRecord) -> str:
        ms = int(record.created * 1000) % 1000
        when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{ms:03d}Z"
        name = record.name
        comp = name[len("drainwatch.") :] if name.startswith("drainwatch.") else name
        msg = _USERINFO.sub(r"\1\2:***@", record.getMessage())
        exc = self.formatException(record.exc_info) if record.exc_info else ""
        if self.fmt == "json":
            doc = {"time": when, "level": record.levelname, "component": comp, "message": msg}
            if exc:
                doc["exc"] = exc
            return json.dumps(doc, ensure_ascii=False)
        line = f"{when} {record.levelname} {comp}: {msg}"
        return f"{line}\n{exc}" if exc else line


class _StderrHandler(logging.Handler):
    """Writes to the ``sys.stderr`` of the moment (a test's captured one included)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


def setup_logging(fmt: str | None = None) -> None:
    """The script's log lines on stderr in ``fmt`` (default: $DRAINWATCH_LOG_FORMAT, else text);
    called again, it replaces the handler."""
    fmt = fmt or os.environ.get("DRAINWATCH_LOG_FORMAT", "").strip().lower() or "text"
    if fmt not in LOG_FORMATS:
        fmt = "text"
    handler = _StderrHandler()
    handler.setFormatter(LineFormatter(fmt))
    for h in list(_log.handlers):
        _log.removeHandler(h)
    _log.addHandler(handler)
    _log.setLevel(logging.INFO)
    _log.propagate = False  # one line even when drainwatch's own logging is set up too


def _say(msg: str, level: int = logging.INFO) -> None:
    if not _log.handlers:
        setup_logging()
    _log.log(level, "%s", msg)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        data = path.read_bytes()[-64 * 1024 :].decode("utf-8", "replace").splitlines()
    except OSError:
        return f"(no {path})"
    return "\n".join(data[-lines:])


@contextlib.contextmanager
def _locked(cfg: Config) -> Iterator[None]:
    """Serialise start/stop between processes sharing a state directory."""
    cfg.state.mkdir(parents=True, exist_ok=True)
    with open(cfg.state / "stack.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_private(path: Path, text: str) -> None:
    """Write a file readable by its owner only (mode 0600), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# --- processes ------------------------------------------------------------------------------


def _read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int, marker: str) -> bool:
    """True when `pid` runs and its command line contains `marker` (guards against pid reuse)."""
    proc = _CHILDREN.get(pid)
    if proc is not None:  # started by this interpreter: poll() is authoritative and reaps it
        return proc.poll() is None
    try:
        os.kill(pid, 0)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and marker in cmdline


def _running_pid(pid_file: Path, marker: str) -> int | None:
    pid = _read_pid(pid_file)
    if pid is not None and _alive(pid, marker):
        return pid
    return None


def _private_log(log: Path, mode: str) -> Any:
    """A log file readable by its owner only (0600; its directory 0700): logs may name users."""
    log.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(log.parent, 0o700)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    fd = os.open(log, flags, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, mode)


def _spawn(cmd: list[str], log: Path, pid_file: Path, env: dict[str, str] | None = None) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists() and log.stat().st_size > LOG_ROTATE_BYTES:
        os.replace(log, log.with_name(log.name + ".1"))
    with _private_log(log, "ab") as out:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        out.write(f"\n===== {stamp} stack.py starts: {' '.join(cmd)}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            cwd=str(pid_file.parent),
        )
    _CHILDREN[proc.pid] = proc
    _write_text(pid_file, f"{proc.pid}\n")
    return proc.pid


def _terminate(pid_file: Path, marker: str, name: str, grace: float) -> bool:
    """SIGTERM the server's process group, wait up to `grace` s, then SIGKILL. True if it ran."""
    pid = _running_pid(pid_file, marker)
    if pid is None:
        with contextlib.suppress(FileNotFoundError):
            pid_file.unlink()
        return False
    t0 = time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    while time.monotonic() - t0 < grace and _alive(pid, marker):
        time.sleep(0.1)
    if _alive(pid, marker):
        _say(f"{name} did not stop within {grace:.0f}s of SIGTERM: SIGKILL", logging.WARNING)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        while _alive(pid, marker):
            time.sleep(0.05)
    proc = _CHILDREN.pop(pid, None)
    if proc is not None:
        proc.wait()
    with contextlib.suppress(FileNotFoundError):
        pid_file.unlink()
    _say(f"{name} stopped (pid {pid}, {time.monotonic() - t0:.1f}s)")
    return True


def _port_open(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def _wait_ready(
    name: str, pid_file: Path, marker: str, log: Path, probe: object, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if _running_pid(pid_file, marker) is None:
            raise StackError(f"{name} exited during start-up; last lines of {log}:\n{_tail(log)}")
        try:
            probe()  # type: ignore[operator]
            return
        except (OSError, StackError, ValueError, struct.error, http.client.HTTPException) as exc:
            # HTTPException: e.g. a connection to a port in the ephemeral range that met itself
            # (TCP self-connect) reads back its own request as the status line
            last = str(exc) or type(exc).__name__
        time.sleep(0.25)
    raise StackError(
        f"{name} not ready after {timeout:.0f}s ({last}); last lines of {log}:\n{_tail(log)}"
    )


# --- Kafka ----------------------------------------------------------------------------------

KAFKA_MARKER = "kafka.Kafka"


def _java() -> str:
    """DRAINWATCH_JAVA, else $JAVA_HOME/bin/java, else Java 17 where Debian puts it, else PATH."""
    candidates = [
        os.environ.get("DRAINWATCH_JAVA", ""),
        str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME") else "",
        "/usr/lib/jvm/java-17-openjdk-amd64/bin/java",
        shutil.which("java") or "",
    ]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise StackError("no Java runtime found (need Java 11+, 17 preferred): set DRAINWATCH_JAVA")


def ensure_kafka_jars(cfg: Config) -> bool:
    """Resolve the broker's jars with Maven unless cached for this pom. True if it resolved."""
    stamp = hashlib.sha256(KAFKA_POM.read_bytes()).hexdigest()
    stamp_file = cfg.kafka_lib / ".pom.sha256"
    if stamp_file.exists() and stamp_file.read_text().strip() == stamp:
        return False
    mvn = os.environ.get("DRAINWATCH_MVN") or shutil.which("mvn")
    if not mvn:
        raise StackError("Maven (mvn) not found: it resolves Kafka's jars (apt-get install maven)")
    tmp = cfg.kafka_dir / "lib.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    cfg.logs.mkdir(parents=True, exist_ok=True)
    build_log = cfg.logs / "build-kafka.log"
    _say(f"resolving Kafka jars with Maven (first start only; log: {build_log})")
    cmd = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(KAFKA_POM),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={tmp}",
        "-DincludeScope=runtime",
    ]
    env = dict(os.environ)
    env.setdefault("JAVA_HOME", str(Path(_java()).resolve().parents[1]))
    with _private_log(build_log, "wb") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cfg.state)
    jars = list(tmp.glob("kafka_2.13-*.jar"))
    if rc != 0 or not jars:
        raise StackError(
            f"Maven could not resolve Kafka's jars (exit {rc}); {build_log}:\n{_tail(build_log)}"
        )
    shutil.rmtree(cfg.kafka_lib, ignore_errors=True)
    os.replace(tmp, cfg.kafka_lib)
    stamp_file.write_text(stamp + "\n")
    return True


def _kafka_cluster_id(cfg: Config) -> str:
    """A Kafka Uuid in its text form (url-safe base64, no padding), kept in the state dir."""
    if cfg.kafka_cluster_id_file.exists():
        return cfg.kafka_cluster_id_file.read_text().strip()
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):  # Kafka's Uuid.randomUuid() rejects these too
            break
    _write_text(cfg.kafka_cluster_id_file, text + "\n")
    return text


def write_kafka_config(cfg: Config) -> None:
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{cfg.controller_port}",
        "listeners": (
            f"PLAINTEXT://127.0.0.1:{cfg.kafka_port},CONTROLLER://127.0.0.1:{cfg.controller_port}"
        ),
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{cfg.kafka_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(cfg.kafka_data),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "offsets.topic.replication.factor": "1",
        # One partition: the first consumer group joins in well under a second on 2 cores.
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "auto.create.topics.enable": "true",
        "group.initial.rebalance.delay.ms": "0",
        # Replays carry historical timestamps: time-based retention would delete them at once.
        "log.retention.ms": "-1",
        "num.network.threads": "2",
        "num.io.threads": "4",
        "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
    }
    text = "# generated by deploy/local/stack.py on every start; edit the script, not this file\n"
    text += "".join(f"{k}={v}\n" for k, v in props.items())
    _write_text(cfg.kafka_properties, text)
    _write_text(
        cfg.kafka_log4j,
        "log4j.rootLogger=INFO, stdout\n"
        "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
        "log4j.logger.kafka.request.logger=WARN\n"
        "log4j.logger.state.change.logger=WARN\n"
        "log4j.logger.kafka.log.LogCleaner=WARN\n",
    )


def _java_cmd(cfg: Config, main: str, *args: str) -> list[str]:
    return [
        _java(),
        "-Xms128m",
        "-Xmx512m",
        "-XX:+UseG1GC",
        "-Djava.awt.headless=true",
        f"-Dlog4j.configuration=file:{cfg.kafka_log4j}",
        f"-Dkafka.logs.dir={cfg.logs}",
        "-cp",
        f"{cfg.kafka_lib}/*",
        main,
        *args,
    ]


def format_kafka_storage(cfg: Config) -> bool:
    """Format the KRaft log directory once. True if it formatted."""
    if (cfg.kafka_data / "meta.properties").exists():
        return False
    cluster_id = _kafka_cluster_id(cfg)
    cmd = _java_cmd(
        cfg, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(cfg.kafka_properties)
    )
    log = cfg.logs / "kafka-format.log"
    with _private_log(log, "wb") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if rc != 0:
        raise StackError(f"kafka StorageTool format failed (exit {rc}); {log}:\n{_tail(log)}")
    return True


def _kafka_string(data: bytes, pos: int) -> tuple[str | None, int]:
    (n,) = struct.unpack_from(">h", data, pos)
    pos += 2
    if n < 0:
        return None, pos
    return data[pos : pos + n].decode(), pos + n


def kafka_metadata(port: int, timeout: float = 2.0) -> tuple[list[tuple[int, str, int]], str]:
    """One Metadata (v4, no topics) round trip over the Kafka protocol: (brokers, cluster id)."""
    client = b"drainwatch-stack"
    body = struct.pack(">hhih", 3, 4, 7, len(client)) + client + struct.pack(">ib", 0, 0)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        head = b""
        while len(head) < 4:
            chunk = sock.recv(4 - len(head))
            if not chunk:
                raise StackError("broker closed the connection")
            head += chunk
        (size,) = struct.unpack(">i", head)
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            if not chunk:
                raise StackError("broker closed the connection")
            data += chunk
    corr, _throttle, n = struct.unpack_from(">iii", data, 0)
    if corr != 7:
        raise StackError(f"unexpected correlation id {corr}")
    pos = 12
    brokers = []
    for _ in range(n):
        (node,) = struct.unpack_from(">i", data, pos)
        host, pos = _kafka_string(data, pos + 4)
        (bport,) = struct.unpack_from(">i", data, pos)
        _rack, pos = _kafka_string(data, pos + 4)
        brokers.append((node, host or "", bport))
    cluster_id, pos = _kafka_string(data, pos)
    return brokers, cluster_id or ""


def kafka_healthy(cfg: Config) -> bool:
    try:
        brokers, _ = kafka_metadata(cfg.kafka_port)
    except (OSError, StackError, struct.error):
        return False
    return any(port == cfg.kafka_port for _, _, port in brokers)


def _kafka_probe(cfg: Config) -> None:
    brokers, _ = kafka_metadata(cfg.kafka_port)
    if not any(port == cfg.kafka_port for _, _, port in brokers):
        raise StackError(f"metadata lists no broker on port {cfg.kafka_port} yet: {brokers}")


def _ports_free(cfg: Config, ports: tuple[int, ...], env_names: str) -> None:
    """Refuse to start on a port some other process (not this state dir's server) holds."""
    for port in ports:
        if _port_open(port):
            raise StackError(
                f"port 127.0.0.1:{port} is taken by a process this state dir ({cfg.state}) did "
                f"not start: stop it, or set {env_names}"
            )


def start_kafka(cfg: Config) -> str:
    """Start the broker unless it runs; wait until a Metadata request lists it. Returns a note."""
    t0 = time.monotonic()
    notes = []
    if _running_pid(cfg.kafka_pid, KAFKA_MARKER) is not None:
        _wait_ready(
            "kafka",
            cfg.kafka_pid,
            KAFKA_MARKER,
            cfg.kafka_log,
            lambda: _kafka_probe(cfg),
            cfg.timeout,
        )
        return "already running"
    _ports_free(
        cfg,
        (cfg.kafka_port, cfg.controller_port),
        "DRAINWATCH_KAFKA_PORT / DRAINWATCH_KAFKA_CONTROLLER_PORT",
    )
    t = time.monotonic()
    if ensure_kafka_jars(cfg):
        notes.append(f"jars resolved in {time.monotonic() - t:.1f}s")
    write_kafka_config(cfg)
    t = time.monotonic()
    if format_kafka_storage(cfg):
        notes.append(f"storage formatted in {time.monotonic() - t:.1f}s")
    cmd = _java_cmd(cfg, KAFKA_MARKER, str(cfg.kafka_properties))
    pid = _spawn(cmd, cfg.kafka_log, cfg.kafka_pid)
    _wait_ready(
        "kafka", cfg.kafka_pid, KAFKA_MARKER, cfg.kafka_log, lambda: _kafka_probe(cfg), cfg.timeout
    )
    notes.append(f"pid {pid}, up in {time.monotonic() - t0:.1f}s")
    return ", ".join(notes)


def stop_kafka(cfg: Config) -> bool:
    return _terminate(cfg.kafka_pid, KAFKA_MARKER, "kafka", grace=60.0)


def restart_kafka(cfg: Config | None = None) -> None:
    """Stop the broker (SIGTERM, clean shutdown) and start it again on the same data."""
    cfg = cfg or Config.from_env()
    with _locked(cfg):
        stop_kafka(cfg)
        _say(f"kafka: {start_kafka(cfg)}")


# --- InfluxDB -------------------------------------------------------------------------------

INFLUX_MARKER = "influxd"


def _go() -> str:
    go = os.environ.get("DRAINWATCH_GO") or shutil.which("go") or "/usr/local/go/bin/go"
    if not os.access(go, os.X_OK):
        raise StackError("no Go toolchain found (it builds influxd once): set DRAINWATCH_GO")
    return go


def ensure_influxd(cfg: Config) -> bool:
    """Build influxd v1.8.10 with `go install` unless already built. True if it built."""
    if os.access(cfg.influxd, os.X_OK):
        return False
    go = _go()
    cfg.logs.mkdir(parents=True, exist_ok=True)
    build_log = cfg.logs / "build-influxd.log"
    _say(
        f"building influxd {INFLUXDB_VERSION} with {go} (first start only, 1-5 min; "
        f"log: {build_log})"
    )
    env = dict(os.environ)
    env["GOBIN"] = str(cfg.influxd.parent)
    env.setdefault("CGO_ENABLED", "0")  # pure Go; no C compiler needed
    # `go install` leaves main.version empty ("vunknown"); stamp it as the release build does so
    # the X-Influxdb-Version header and SHOW DIAGNOSTICS tell the truth.
    ldflags = f"-X main.version={INFLUXDB_VERSION.lstrip('v')} -X main.branch=1.8"
    cmd = [go, "install", f"-ldflags={ldflags}", f"{INFLUXDB_MODULE}@{INFLUXDB_VERSION}"]
    with _private_log(build_log, "wb") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cfg.state)
    if rc != 0 or not os.access(cfg.influxd, os.X_OK):
        raise StackError(f"`{' '.join(cmd)}` failed (exit {rc}); {build_log}:\n{_tail(build_log)}")
    out = subprocess.run([str(cfg.influxd), "version"], capture_output=True, text=True).stdout
    if INFLUXDB_VERSION.lstrip("v") not in out:
        cfg.influxd.unlink()
        raise StackError(f"built influxd reports an unexpected version: {out.strip()!r}")
    return True


def write_influx_config(cfg: Config) -> None:
    d = cfg.influx_dir
    _write_text(
        cfg.influx_conf,
        f"""# generated by deploy/local/stack.py on every start; edit the script, not this file
reporting-disabled = true
bind-address = "127.0.0.1:{cfg.influx_rpc_port}"

[meta]
  dir = "{d / "meta"}"

[data]
  dir = "{d / "data"}"
  wal-dir = "{d / "wal"}"
  query-log-enabled = false

[monitor]
  store-enabled = false

[subscriber]
  enabled = false

[continuous_queries]
  log-enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:{cfg.influx_port}"
  auth-enabled = true
  flux-enabled = true
  flux-log-enabled = false
  # the HTTP access log prints query text, and the bootstrap's CREATE USER carries the password
  log-enabled = false
  suppress-write-log = true
  pprof-enabled = false

[logging]
  level = "info"
""",
    )


def _influx_request(
    cfg: Config,
    path: str,
    *,
    params: dict[str, str] | None = None,
    data: bytes | None = None,
    auth: str | None = None,
    timeout: float = 10.0,
) -> tuple[int, bytes]:
    url = cfg.influx_url + path + ("?" + urllib.parse.urlencode(params) if params else "")
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    if data is not None:
        req.add_header("Content-Type", "application/x-www-form-urlencoded")
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def influx_query(cfg: Config, q: str, *, db: str | None = None, auth: str | None = None) -> dict:
    """Run InfluxQL through POST /query (admin credentials by default); raise on any error."""
    if auth is None:
        auth = cfg.influx_token_file.read_text().strip()
    params = {"epoch": "ns"}
    if db:
        params["db"] = db
    status, body = _influx_request(
        cfg, "/query", params=params, data=urllib.parse.urlencode({"q": q}).encode(), auth=auth
    )
    try:
        doc = json.loads(body or b"{}")
    except ValueError:
        doc = {"error": body.decode("utf-8", "replace")}
    errors = [doc.get("error")] + [r.get("error") for r in doc.get("results", [])]
    errors = [e for e in errors if e]
    if status != 200 or errors:
        raise StackError(f"InfluxQL {q!r} -> HTTP {status}: {'; '.join(errors) or body[:200]!r}")
    return doc


def influx_healthy(cfg: Config) -> bool:
    try:
        status, _ = _influx_request(cfg, "/ping", timeout=2.0)
    except (OSError, http.client.HTTPException):
        return False
    return status == 204


def _influx_probe(cfg: Config) -> None:
    status, _ = _influx_request(cfg, "/ping", timeout=2.0)
    if status != 204:
        raise StackError(f"/ping answered {status}")


def _bootstrap_influx(cfg: Config) -> None:
    """Create the admin user (first start) and the database; both are idempotent."""
    if not cfg.influx_token_file.exists():
        _write_private(cfg.influx_token_file, f"{ADMIN_USER}:{secrets.token_urlsafe(24)}\n")
    token = cfg.influx_token_file.read_text().strip()
    user, password = token.split(":", 1)
    try:
        influx_query(cfg, "SHOW USERS", auth=token)
    except StackError:
        # With auth on and no user yet, InfluxDB 1.x accepts exactly one unauthenticated query:
        # creating the first admin.
        q = f"CREATE USER \"{user}\" WITH PASSWORD '{password}' WITH ALL PRIVILEGES"
        status, body = _influx_request(
            cfg, "/query", data=urllib.parse.urlencode({"q": q}).encode()
        )
        if status != 200 or b'"error"' in body:
            raise StackError(
                f"cannot authenticate as {user} nor create it (HTTP {status}: {body[:200]!r}); "
                f"the credentials in {cfg.influx_token_file} do not match {cfg.influx_dir}/meta: "
                f"stop the stack and delete {cfg.influx_dir}/{{meta,data,wal}} to start afresh"
            ) from None
        influx_query(cfg, "SHOW USERS", auth=token)
    influx_query(cfg, f'CREATE DATABASE "{DATABASE}"')
    rps = influx_query(cfg, f'SHOW RETENTION POLICIES ON "{DATABASE}"')
    names = [row[0] for s in rps["results"][0].get("series", []) for row in s["values"]]
    if RETENTION_POLICY not in names:
        raise StackError(f"database {DATABASE} has no retention policy {RETENTION_POLICY}: {names}")
    _scoped_user(cfg, cfg.influx_write_token_file, WRITER_USER, "WRITE")
    _scoped_user(cfg, cfg.influx_read_token_file, READER_USER, "READ")


def _rows(doc: dict) -> list[list[Any]]:
    return [row for s in doc["results"][0].get("series", []) for row in s.get("values", [])]


def _scoped_user(cfg: Config, token_file: Path, user: str, privilege: str) -> None:
    """The token file (0600, ``user:password``, made once) of a user whose only privilege is
    ``privilege`` (WRITE or READ) on the pipeline's database: created, its password and grants
    set to match when they do not. Idempotent, and a running client never sees its token
    refused: nothing changes while the user, password and grant are already right."""
    if not token_file.exists():
        _write_private(token_file, f"{user}:{secrets.token_urlsafe(24)}\n")
    token = token_file.read_text().strip()
    name, _, password = token.partition(":")
    if name != user or not password:
        raise StackError(f"{token_file} does not hold {user}:<password>: delete it and start")
    users = {row[0]: row[1] for row in _rows(influx_query(cfg, "SHOW USERS"))}
    if user not in users:
        influx_query(cfg, f"CREATE USER \"{user}\" WITH PASSWORD '{password}'")
    else:
        status, _ = _influx_request(cfg, "/query", params={"q": "SHOW DATABASES"}, auth=token)
        if status == 401:  # the file was replaced, or the user made by hand: the file wins
            influx_query(cfg, f"SET PASSWORD FOR \"{user}\" = '{password}'")
        if users[user]:  # an admin: not what this account is for
            influx_query(cfg, f'REVOKE ALL PRIVILEGES FROM "{user}"')
    rows = _rows(influx_query(cfg, f'SHOW GRANTS FOR "{user}"'))
    grants = [(db, priv) for db, priv in rows if priv != "NO PRIVILEGES"]
    if grants != [(DATABASE, privilege)]:
        for db, _ in grants:
            influx_query(cfg, f'REVOKE ALL PRIVILEGES ON "{db}" FROM "{user}"')
        influx_query(cfg, f'GRANT {privilege} ON "{DATABASE}" TO "{user}"')


def start_influx(cfg: Config) -> str:
    t0 = time.monotonic()
    notes = []
    if _running_pid(cfg.influx_pid, INFLUX_MARKER) is None:
        _ports_free(
            cfg,
            (cfg.influx_port, cfg.influx_rpc_port),
            "DRAINWATCH_INFLUX_PORT / DRAINWATCH_INFLUX_RPC_PORT",
        )
        t = time.monotonic()
        if ensure_influxd(cfg):
            notes.append(f"influxd built in {time.monotonic() - t:.1f}s")
        write_influx_config(cfg)
        # INFLUXDB_* variables override the config file: keep the caller's out of it.
        env = {k: v for k, v in os.environ.items() if not k.startswith("INFLUXDB_")}
        pid = _spawn(
            [str(cfg.influxd), "run", "-config", str(cfg.influx_conf)],
            cfg.influx_log,
            cfg.influx_pid,
            env=env,
        )
        notes.append(f"pid {pid}")
    else:
        notes.append("already running")
    _wait_ready(
        "influxdb",
        cfg.influx_pid,
        INFLUX_MARKER,
        cfg.influx_log,
        lambda: _influx_probe(cfg),
        cfg.timeout,
    )
    _bootstrap_influx(cfg)
    if "already running" not in notes:
        notes.append(f"up in {time.monotonic() - t0:.1f}s")
    return ", ".join(notes)


def stop_influx(cfg: Config) -> bool:
    return _terminate(cfg.influx_pid, INFLUX_MARKER, "influxdb", grace=30.0)


# --- Grafana --------------------------------------------------------------------------------

GRAFANA_MODULE = "github.com/grafana/grafana"
# Grafana 10.0.0-preview (commit 81d85ce8028d, 2023-06-09): the only grafana/grafana version the
# Go module proxy serves; its dashboards' schema (38) is migrated forward by newer Grafana.
GRAFANA_VERSION = "v1.9.2-0.20230609164553-81d85ce8028d"
GRAFANA_RELEASE = "10.0.0-pre"
WIRE = "github.com/google/wire/cmd/wire@v0.7.0"  # wire 0.5/0.6 fail on Go 1.26
GRAFANA_MARKER = "grafana server"
GRAFANA_ADMIN = "admin"
# Where the compose file mounts the repo's files and the token (deploy/compose.yaml); a local
# instance reads the same provisioning files with these paths pointing at the local copies.
CONTAINER_DASHBOARDS = "/etc/grafana/dashboards/drainwatch"
CONTAINER_TOKEN = "/run/drainwatch/influxdb_read.token"  # Grafana's read-only token


def ensure_grafana(cfg: Config) -> bool:
    """Build the Grafana server once (module from the Go proxy, `wire gen`, `go build`) into
    grafana/bin with its home directory grafana/home (conf/, public/). True if it built."""
    stamp = f"{GRAFANA_MODULE}@{GRAFANA_VERSION} {GRAFANA_RELEASE}"
    stamp_file = cfg.grafana_dir / "build.stamp"
    if (
        os.access(cfg.grafana_bin, os.X_OK)
        and (cfg.grafana_home / "conf").is_dir()
        and stamp_file.exists()
        and stamp_file.read_text().strip() == stamp
    ):
        return False
    go = _go()
    cfg.logs.mkdir(parents=True, exist_ok=True)
    build_log = cfg.logs / "build-grafana.log"
    _say(
        f"building Grafana {GRAFANA_RELEASE} with {go} (first start only, ~4 min on 2 cores; "
        f"log: {build_log})"
    )
    env = dict(os.environ)
    env["GOBIN"] = str(cfg.grafana_dir / "tools")
    home = cfg.grafana_dir / "home.partial"
    with _private_log(build_log, "wb") as out:

        def run(cmd: list[str], cwd: Path) -> None:
            out.write(f"\n$ {' '.join(cmd)}\n".encode())
            out.flush()
            rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
            if rc != 0:
                out.flush()
                raise StackError(
                    f"`{' '.join(cmd)}` failed (exit {rc}); {build_log}:\n{_tail(build_log)}"
                )

        cfg.grafana_dir.mkdir(parents=True, exist_ok=True)
        dl = subprocess.run(
            [go, "mod", "download", "-json", f"{GRAFANA_MODULE}@{GRAFANA_VERSION}"],
            capture_output=True,
            env=env,
            cwd=cfg.state,
        )
        out.write(dl.stdout + dl.stderr)
        try:
            src = Path(json.loads(dl.stdout)["Dir"])
        except (ValueError, KeyError):
            raise StackError(
                f"go mod download of {GRAFANA_MODULE}@{GRAFANA_VERSION} failed; "
                f"{build_log}:\n{_tail(build_log)}"
            ) from None
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(src, home, symlinks=True)  # the module cache is read-only: a copy
        for d, _, files in os.walk(home):
            os.chmod(d, 0o755)
            for f in files:
                p = os.path.join(d, f)
                if not os.path.islink(p):
                    os.chmod(p, 0o644)
        run([go, "install", WIRE], cfg.state)
        run([str(cfg.grafana_dir / "tools" / "wire"), "gen", "-tags", "oss", "./pkg/server"], home)
        binary = cfg.grafana_bin.with_name("grafana.partial")
        binary.parent.mkdir(parents=True, exist_ok=True)
        run(
            [
                go,
                "build",
                "-ldflags",
                f"-X main.version={GRAFANA_RELEASE}",
                "-o",
                str(binary),
                "./pkg/cmd/grafana",
            ],
            home,
        )
    shutil.rmtree(cfg.grafana_home, ignore_errors=True)
    os.replace(home, cfg.grafana_home)
    os.replace(binary, cfg.grafana_bin)
    stamp_file.write_text(stamp + "\n")
    return True


def grafana_password(cfg: Config) -> str:
    """The admin password, generated into the state dir (0600) on first use."""
    if not cfg.grafana_password_file.exists():
        _write_private(cfg.grafana_password_file, secrets.token_urlsafe(24) + "\n")
    return cfg.grafana_password_file.read_text().strip()


def grafana_provisioning(cfg: Config, dst: Path, token_file: Path | None = None) -> Path:
    """Copy the repo's provisioning files (grafana/provisioning) to `dst`, unchanged but for
    the two paths the compose file mounts: the dashboards directory and the InfluxDB token.
    The stack's Grafana gets the read-only token (start_grafana); the default, the admin
    token, is for a test's own instance reading a database the test made."""
    shutil.rmtree(dst, ignore_errors=True)
    token = str(token_file or cfg.influx_token_file)
    for path in sorted((REPO / "grafana" / "provisioning").rglob("*")):
        target = dst / path.relative_to(REPO / "grafana" / "provisioning")
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        text = path.read_text()
        text = text.replace(CONTAINER_DASHBOARDS, str(REPO / "grafana" / "dashboards"))
        _write_text(target, text.replace(CONTAINER_TOKEN, token))
    return dst


def write_grafana_config(
    cfg: Config, run: Path, port: int, ha_port: int, poll_interval: str = "60s"
) -> Path:
    """custom.ini of one instance under `run` (data, logs, plugins, provisioning)."""
    ini = run / "custom.ini"
    _write_private(
        ini,
        f"""# generated by deploy/local/stack.py; edit the script, not this file
[paths]
data = {run / "data"}
logs = {run / "logs"}
plugins = {run / "plugins"}
provisioning = {run / "provisioning"}

[server]
http_addr = 127.0.0.1
http_port = {port}

[database]
type = sqlite3

[security]
admin_user = {GRAFANA_ADMIN}
admin_password = $__file{{{cfg.grafana_password_file}}}
disable_gravatar = true

[users]
allow_sign_up = false

[analytics]
reporting_enabled = false
check_for_updates = false
check_for_plugin_updates = false

[log]
mode = console
level = warn

[alerting]
enabled = false

[unified_alerting]
enabled = true
ha_listen_address = 127.0.0.1:{ha_port}
alertmanager_config_poll_interval = {poll_interval}

[feature_toggles]
# InfluxQL from the browser through Grafana's backend (/api/ds/query), as the alert rules, the
# API tests and Grafana 11 (deploy/compose.yaml) run it: 10.0's default path, its data proxy,
# now and then answered a panel's query 200 with an empty body
enable = influxdbBackendMigration
""",
    )
    return ini


def grafana_request(
    port: int, path: str, body: Any = None, *, password: str | None, timeout: float = 10.0
) -> tuple[int, Any]:
    """One JSON request to a local Grafana with the admin's basic auth: (status, decoded body)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data, method="GET" if data is None else "POST"
    )
    req.add_header("Content-Type", "application/json")
    if password is not None:
        auth = base64.b64encode(f"{GRAFANA_ADMIN}:{password}".encode()).decode()
        req.add_header("Authorization", "Basic " + auth)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw or b"null")
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def grafana_ui_dir(cfg: Config) -> Path:
    """Where deploy/local/grafana_ui.py builds the web UI: a copy of grafana/home with the
    frontend bundle (public/build) and, written last, ui.stamp."""
    return cfg.grafana_dir / "ui"


def grafana_homepath(cfg: Config) -> Path:
    """The --homepath of a Grafana server: the built web UI when its ui.stamp names this module
    version, else grafana/home (the HTTP API is complete; the UI page is blank)."""
    try:
        stamp = json.loads((grafana_ui_dir(cfg) / "ui.stamp").read_text())
    except (OSError, ValueError):
        return cfg.grafana_home
    if isinstance(stamp, dict) and stamp.get("module") == f"{GRAFANA_MODULE}@{GRAFANA_VERSION}":
        return grafana_ui_dir(cfg)
    return cfg.grafana_home


def start_grafana_instance(
    cfg: Config,
    run: Path,
    port: int,
    ha_port: int,
    env: dict[str, str],
    poll_interval: str = "60s",
    log: Path | None = None,
) -> int:
    """Start a Grafana server on `port` with its state under `run` (run/provisioning must be
    there) and wait until /api/health answers with the database ok. Returns its pid."""
    ensure_grafana(cfg)
    grafana_password(cfg)
    ini = write_grafana_config(cfg, run, port, ha_port, poll_interval)
    proc_env = {k: v for k, v in os.environ.items() if not k.startswith("GF_")}
    proc_env.update(env)
    pid_file = run / "grafana.pid"
    log = log or run / "grafana.log"
    home = grafana_homepath(cfg)  # the built web UI's tree, else grafana/home
    pid = _spawn(
        [str(cfg.grafana_bin), "server", "--homepath", str(home), "--config", str(ini)],
        log,
        pid_file,
        env=proc_env,
    )

    def probe() -> None:
        status, doc = grafana_request(port, "/api/health", password=None, timeout=2.0)
        if status != 200 or not isinstance(doc, dict) or doc.get("database") != "ok":
            raise StackError(f"/api/health answered {status}: {doc}")

    _wait_ready("grafana", pid_file, GRAFANA_MARKER, log, probe, cfg.timeout)
    return pid


def stop_grafana_instance(run: Path) -> bool:
    return _terminate(run / "grafana.pid", GRAFANA_MARKER, "grafana", grace=30.0)


def grafana_env(cfg: Config) -> dict[str, str]:
    """The variables the repo's provisioning files read, for the stack's instance."""
    return {
        "DRAINWATCH_GRAFANA_INFLUX_URL": cfg.influx_url,
        "DRAINWATCH_GRAFANA_INFLUX_DB": DATABASE,
        # the on-call contact point: nothing listens on the discard port unless you set one
        "DRAINWATCH_GRAFANA_WEBHOOK_URL": os.environ.get(
            "DRAINWATCH_GRAFANA_WEBHOOK_URL", "http://127.0.0.1:9/drainwatch-alerts"
        ),
    }


def grafana_healthy(cfg: Config) -> bool:
    try:
        status, doc = grafana_request(cfg.grafana_port, "/api/health", password=None, timeout=2.0)
    except (OSError, http.client.HTTPException):
        return False
    return status == 200 and isinstance(doc, dict) and doc.get("database") == "ok"


def start_grafana(cfg: Config, influx_ready: Callable[[], object] | None = None) -> str:
    """Build once, then start the stack's Grafana with the repo's provisioning files and the
    read-only InfluxDB token. Grafana reads the token file when it provisions the datasource,
    at start: it starts only once ``influx_ready`` has returned (InfluxDB up, its bootstrap
    done, the token files written), never before (a prebuilt Grafana starts in a second)."""
    t0 = time.monotonic()
    pid_file = cfg.grafana_run / "grafana.pid"
    if _running_pid(pid_file, GRAFANA_MARKER) is not None:
        ds = cfg.grafana_run / "provisioning" / "datasources" / "influxdb.yaml"
        with contextlib.suppress(OSError):
            if str(cfg.influx_read_token_file) not in ds.read_text():
                why = "grafana runs with the admin token (started before the read-only one existed)"
                _say(
                    f"{why}: stop and start the stack to give it the read-only one", logging.WARNING
                )
        return "already running"
    _ports_free(
        cfg,
        (cfg.grafana_port, cfg.grafana_ha_port),
        "DRAINWATCH_GRAFANA_PORT / DRAINWATCH_GRAFANA_HA_PORT",
    )
    notes = []
    if ensure_grafana(cfg):
        notes.append(f"built in {time.monotonic() - t0:.1f}s")
    if influx_ready is not None:
        try:
            influx_ready()
        except Exception:  # InfluxDB's own error is reported beside this one
            raise StackError("not started: InfluxDB did not come up") from None
    if not cfg.influx_read_token_file.is_file():
        missing = cfg.influx_read_token_file
        raise StackError(f"not started: no {missing} (InfluxDB's bootstrap writes it)")
    grafana_provisioning(cfg, cfg.grafana_run / "provisioning", cfg.influx_read_token_file)
    pid = start_grafana_instance(
        cfg,
        cfg.grafana_run,
        cfg.grafana_port,
        cfg.grafana_ha_port,
        grafana_env(cfg),
        log=cfg.grafana_log,
    )
    notes.append(f"pid {pid}, up in {time.monotonic() - t0:.1f}s")
    return ", ".join(notes)


def stop_grafana(cfg: Config) -> bool:
    return stop_grafana_instance(cfg.grafana_run)


# --- the stack ------------------------------------------------------------------------------


def write_stack_env(cfg: Config) -> dict[str, str]:
    env = {
        "DRAINWATCH_KAFKA_BOOTSTRAP": cfg.kafka_bootstrap,
        "DRAINWATCH_INFLUX_URL": cfg.influx_url,
        "DRAINWATCH_INFLUX_TOKEN_FILE": str(cfg.influx_token_file),
        "DRAINWATCH_INFLUX_ORG": "-",
        "DRAINWATCH_INFLUX_BUCKET": f"{DATABASE}/{RETENTION_POLICY}",
        "DRAINWATCH_INFLUX_DATABASE": DATABASE,
        "DRAINWATCH_STACK_LOGS": str(cfg.logs),
        "DRAINWATCH_GRAFANA_URL": cfg.grafana_url,
        "DRAINWATCH_GRAFANA_USER": GRAFANA_ADMIN,
        "DRAINWATCH_GRAFANA_PASSWORD_FILE": str(cfg.grafana_password_file),
        # the scoped tokens: a worker of your own writes the pipeline's database with the first
        # (as its DRAINWATCH_INFLUX_TOKEN_FILE), Grafana reads it with the second;
        # DRAINWATCH_INFLUX_TOKEN_FILE above is the admin's, for the tests and demos that make
        # databases of their own
        "DRAINWATCH_STACK_INFLUX_WRITE_TOKEN_FILE": str(cfg.influx_write_token_file),
        "DRAINWATCH_STACK_INFLUX_READ_TOKEN_FILE": str(cfg.influx_read_token_file),
        "DRAINWATCH_STACK_INFLUX_ADMIN_TOKEN_FILE": str(cfg.influx_token_file),
    }
    text = "# written by deploy/local/stack.py start; token files hold user:password (0600)\n"
    _write_text(cfg.stack_env, text + "".join(f"{k}={v}\n" for k, v in env.items()))
    return env


def read_stack_env(cfg: Config | None = None) -> dict[str, str]:
    cfg = cfg or Config.from_env()
    env = {}
    for line in cfg.stack_env.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            env[key.strip()] = value.strip()
    return env


def health(cfg: Config | None = None) -> dict[str, bool]:
    cfg = cfg or Config.from_env()
    return {
        "kafka": _running_pid(cfg.kafka_pid, KAFKA_MARKER) is not None and kafka_healthy(cfg),
        "influxdb": _running_pid(cfg.influx_pid, INFLUX_MARKER) is not None and influx_healthy(cfg),
        "grafana": _running_pid(cfg.grafana_run / "grafana.pid", GRAFANA_MARKER) is not None
        and grafana_healthy(cfg),
    }


def start(cfg: Config | None = None) -> dict[str, str]:
    """Build what is missing, start both servers (no-op if running), write stack.env."""
    cfg = cfg or Config.from_env()
    t0 = time.monotonic()
    with _locked(cfg):
        cfg.logs.mkdir(parents=True, exist_ok=True)
        _say(f"state dir {cfg.state}")
        was_running = health(cfg)
        try:
            # All at once: the JVM, influxd and Grafana start (and, the first time, build) in
            # parallel.
            with ThreadPoolExecutor(max_workers=3) as pool:
                kafka = pool.submit(start_kafka, cfg)
                influx = pool.submit(start_influx, cfg)
                # Grafana builds meanwhile, then waits for InfluxDB's token files
                grafana = pool.submit(start_grafana, cfg, influx.result)
                errors = []
                for name, where, fut in (
                    ("kafka", cfg.kafka_bootstrap, kafka),
                    ("influxdb", cfg.influx_url, influx),
                    ("grafana", cfg.grafana_url, grafana),
                ):
                    try:
                        _say(f"{name} {where}: {fut.result()}")
                    except StackError as exc:
                        errors.append(f"{name}: {exc}")
            if errors:
                raise StackError("\n".join(errors))
        except BaseException:
            # Leave nothing half-started behind: stop what this call started.
            if not was_running["kafka"]:
                stop_kafka(cfg)
            if not was_running["influxdb"]:
                stop_influx(cfg)
            if not was_running["grafana"]:
                stop_grafana(cfg)
            raise
        env = write_stack_env(cfg)
    _say(
        f"stack up in {time.monotonic() - t0:.1f}s; clients read {cfg.stack_env}; "
        f"logs in {cfg.logs}"
    )
    return env


def stop(cfg: Config | None = None) -> None:
    cfg = cfg or Config.from_env()
    with _locked(cfg):
        ran = [stop_kafka(cfg), stop_influx(cfg), stop_grafana(cfg)]
    if not any(ran):
        _say("nothing was running")


def _report_logs(cfg: Config, rc: int) -> None:
    _say(f"run failed (exit {rc}): server logs are kept in {cfg.logs}", logging.ERROR)
    for log in (cfg.kafka_log, cfg.influx_log, cfg.grafana_log):
        _say(f"---- last lines of {log} ----\n{_tail(log, 30)}", logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stack.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=None,
        help="log line format: text or json (default: $DRAINWATCH_LOG_FORMAT, else text)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("start", help="build what is missing, start Kafka, InfluxDB and Grafana")
    p_stop = sub.add_parser("stop", help="stop the servers (SIGTERM, then SIGKILL)")
    p_stop.add_argument(
        "--keep-logs-if",
        type=int,
        default=0,
        metavar="RC",
        help="when RC != 0, say where the logs are and print the tails of the server logs",
    )
    sub.add_parser("status", help="exit 0 when every server is up and answering")
    sub.add_parser("restart-kafka", help="stop and start the broker only")
    for p in sub.choices.values():  # after the command too (`stack.py start --log-format json`)
        p.add_argument(
            "--log-format",
            choices=LOG_FORMATS,
            default=argparse.SUPPRESS,
            help="log line format: text or json",
        )
    args = parser.parse_args(argv)
    setup_logging(args.log_format)
    cfg = Config.from_env()
    try:
        if args.command == "start":
            start(cfg)
        elif args.command == "stop":
            if args.keep_logs_if:
                _report_logs(cfg, args.keep_logs_if)
            stop(cfg)
        elif args.command == "restart-kafka":
            restart_kafka(cfg)
        else:
            ok = health(cfg)
            print(f"kafka     {cfg.kafka_bootstrap:<28} {'up' if ok['kafka'] else 'DOWN'}")
            print(f"influxdb  {cfg.influx_url:<28} {'up' if ok['influxdb'] else 'DOWN'}")
            print(f"grafana   {cfg.grafana_url:<28} {'up' if ok['grafana'] else 'DOWN'}")
            print(f"state     {cfg.state}")
            return 0 if all(ok.values()) else 1
    except StackError as exc:
        _say(f"{exc}", logging.ERROR)
        _say(f"logs: {cfg.logs}", logging.ERROR)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
