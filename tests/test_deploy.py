"""Production deployment files: compose stack, Grafana provisioning, dashboard, example TOML.

No Docker engine runs here. `docker compose config` is used when the compose plugin exists;
otherwise (and always, in addition) the files are checked structurally, and the worker's
environment from compose.yaml + env.example is fed through the real settings loader.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is in the test extra: pip install -e '.[test]'")

from streams.cli import build_parser  # noqa: E402
from streams.config import SPECS, Settings, example_toml, load_settings  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
GRAFANA = REPO / "grafana"
COMPOSE = DEPLOY / "compose.yaml"
ENV_EXAMPLE = DEPLOY / "env.example"
DS_UID = "drainwatch-influxdb"

# The measurements and fields the pipeline writes (streaming issue's InfluxDB sink).
SCHEMA: dict[str, dict[str, set[str]]] = {
    "drain": {
        "tags": {"cluster", "window"},
        "fields": {
            "drain_node_seconds",
            "accounted_node_seconds",
            "unallocated_idle_node_seconds",
            "down_node_seconds",
            "unaccounted_node_seconds",
            "drain_pct_static",
            "drain_pct_dynamic",
            "basis_seconds_per_node",
            "length_seconds",
            "provisional",
        },
    },
    "node_states": {
        "tags": {"cluster", "window", "state", "has_rsv", "has_job"},
        "fields": {"node_seconds"},
    },
    "drain_size_group": {"tags": {"cluster", "group"}, "fields": {"drain_node_seconds"}},
    "drain_job": {
        "tags": {"cluster"},
        "fields": {"job", "drain_node_seconds", "nodes_charged", "nodes_running"},
    },
}
WINDOWS = {"day", "hour", "minute"}


def load_yaml(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def env_example() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f"env.example: not KEY=VALUE: {line!r}"
            out[key] = value
    return out


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def referenced_vars(text: str) -> dict[str, str]:
    """${VAR...} references (ignoring $$ escapes) -> operator ('' , ':-', '-', ':?', '?')."""
    text = text.replace("$$", "")
    return {m.group(1): m.group(2) or "" for m in _VAR.finditer(text)}


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose-style interpolation of one value (${VAR}, ${VAR:-d}, ${VAR:?e}, $$)."""

    def sub(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        val = env.get(name)
        if op in (":?", "?") and (val is None or (op == ":?" and val == "")):
            raise AssertionError(f"required variable {name} unset: {arg}")
        if op == ":-" and not val:
            return arg
        if op == "-" and val is None:
            return arg
        return val or ""

    return _VAR.sub(sub, value.replace("$$", "\0")).replace("\0", "$")


def filled_env(tmp_path: Path) -> dict[str, str]:
    """env.example with the deliberately empty passwords filled and a real token file."""
    env = env_example()
    env["INFLUXDB_ADMIN_PASSWORD"] = "test-only-influx-pw"
    env["GRAFANA_ADMIN_PASSWORD"] = "test-only-grafana-pw"
    token = tmp_path / "influxdb_admin_token"
    token.write_text("test-only-token\n")
    env["INFLUXDB_ADMIN_TOKEN_FILE"] = str(token)
    return env


SERVICES = {"kafka", "influxdb", "influxdb-tokens", "grafana", "drainwatch-worker"}
ONE_SHOT = {"influxdb-tokens"}  # runs once before the worker and Grafana, then exits
# who may hold the InfluxDB admin token: its first-start setup and the service making the
# scoped tokens; the worker writes with a write-only token, Grafana reads with a read-only one
ADMIN_TOKEN_HOLDERS = {"influxdb", "influxdb-tokens"}
WRITE_TOKEN = "/run/drainwatch/influxdb_write.token"
READ_TOKEN = "/run/drainwatch/influxdb_read.token"


def secret_names(svc: dict[str, Any]) -> set[str]:
    """The secrets a service mounts (short syntax, or compose-go's resolved long one)."""
    return {x if isinstance(x, str) else x["source"] for x in svc.get("secrets") or []}


def named_mounts(svc: dict[str, Any]) -> dict[str, str]:
    """Named volume -> where the service mounts it (short syntax, or the resolved long one)."""
    out = {}
    for v in svc.get("volumes") or []:
        if isinstance(v, str):
            source, target = v.split(":")[:2]
            if not source.startswith((".", "/")):
                out[source] = target
        elif v["type"] == "volume":
            out[v["source"]] = v["target"]
    return out


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_yaml(COMPOSE)


# --- compose.yaml -----------------------------------------------------------------------------


def test_compose_services_and_healthchecks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == SERVICES
    for name, svc in services.items():
        assert "image" in svc or "build" in svc, name
        if name in ONE_SHOT:  # exits when done: no healthcheck, never restarted, no port
            assert svc.get("restart") == "no" and "healthcheck" not in svc, name
            assert "ports" not in svc, name
            continue
        hc = svc.get("healthcheck")
        assert hc and hc.get("test") and hc["test"][0] in ("CMD", "CMD-SHELL"), name
        assert svc.get("restart") == "unless-stopped", name
    assert services["kafka"]["image"].startswith("apache/kafka:")
    assert services["influxdb"]["image"].startswith("influxdb:2.7")
    assert services["grafana"]["image"].startswith("grafana/grafana:")
    kafka_env = services["kafka"]["environment"]
    assert kafka_env["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft, no ZooKeeper


def test_compose_named_volumes_and_bind_mounts(compose: dict[str, Any]) -> None:
    declared = set(compose["volumes"])
    used: set[str] = set()
    for svc in compose["services"].values():
        for vol in svc.get("volumes", []):
            source = vol.split(":")[0]
            if source.startswith((".", "/")):
                assert (DEPLOY / source).resolve().exists(), f"bind mount source {source}"
            else:
                used.add(source)
    assert used == declared
    for svc in SERVICES:
        assert any(not v.startswith((".", "/")) for v in compose["services"][svc]["volumes"]), svc


def test_compose_variables_defined_and_no_passwords_baked_in(compose: dict[str, Any]) -> None:
    env = env_example()
    refs = referenced_vars(COMPOSE.read_text(encoding="utf-8"))
    assert set(refs) <= set(env), f"undefined in env.example: {set(refs) - set(env)}"
    secret_like = re.compile(r"PASSWORD|TOKEN|SECRET", re.I)
    for name, svc in compose["services"].items():
        for key, value in (svc.get("environment") or {}).items():
            if secret_like.search(key) and not key.endswith("_FILE"):
                m = _VAR.fullmatch(str(value))
                assert m and m.group(2) == ":?", f"{name}.{key} must be ${{VAR:?...}}: {value!r}"
                assert env[m.group(1)] == "", f"env.example ships a value for {m.group(1)}"
    for var, op in refs.items():
        if secret_like.search(var) and not var.endswith("_FILE"):
            assert op == ":?", var


def test_compose_admin_token_goes_to_the_setup_and_the_token_maker_only(
    compose: dict[str, Any],
) -> None:
    """Least privilege: the admin token (a secret file) reaches InfluxDB's setup and the
    one-shot influxdb-tokens service only; the worker gets a write-only token, Grafana a
    read-only one, each from a volume only it and the token maker mount; both start after the
    token maker finished."""
    secret = compose["secrets"]["influxdb_admin_token"]
    assert set(compose["secrets"]) == {"influxdb_admin_token"}
    assert referenced_vars(secret["file"]) == {"INFLUXDB_ADMIN_TOKEN_FILE": ":?"}
    services = compose["services"]
    holders = {n for n, svc in services.items() if "influxdb_admin_token" in secret_names(svc)}
    assert holders == ADMIN_TOKEN_HOLDERS
    for name, svc in services.items():
        text = json.dumps(svc)
        if name not in ADMIN_TOKEN_HOLDERS:
            assert "influxdb_admin_token" not in text and "ADMIN_TOKEN" not in text, name
    # InfluxDB's setup token comes from the secret file, never from an env value in the file.
    entry = " ".join(services["influxdb"]["entrypoint"])
    assert "/run/secrets/influxdb_admin_token" in entry
    assert "DOCKER_INFLUXDB_INIT_ADMIN_TOKEN" not in services["influxdb"]["environment"]
    # the scoped tokens: one volume each, mounted read-only by their one reader
    maker = named_mounts(services["influxdb-tokens"])
    worker, grafana = services["drainwatch-worker"], services["grafana"]
    assert maker["influxdb-worker-token"] == "/tokens/worker"
    assert maker["influxdb-grafana-token"] == "/tokens/grafana"
    assert "influxdb-worker-token:/run/drainwatch:ro" in worker["volumes"]
    assert "influxdb-grafana-token:/run/drainwatch:ro" in grafana["volumes"]
    for name, svc in services.items():
        mounts = named_mounts(svc)
        if name not in ("influxdb-tokens", "drainwatch-worker"):
            assert "influxdb-worker-token" not in mounts, name
        if name not in ("influxdb-tokens", "grafana"):
            assert "influxdb-grafana-token" not in mounts, name
    worker_env = worker["environment"]
    assert worker_env["DRAINWATCH_INFLUX_TOKEN_FILE"] == WRITE_TOKEN
    assert "DRAINWATCH_INFLUX_TOKEN" not in worker_env
    for svc in (worker, grafana):
        assert svc["depends_on"]["influxdb-tokens"] == {
            "condition": "service_completed_successfully"
        }
    # the token maker: the worker's write-only and Grafana's read-only token, each owned by
    # the user of the image that reads it
    script = (DEPLOY / "influxdb-tokens.sh").read_text()
    assert '"--$2-bucket"' in script and 'token "$tokens/worker" write' in script
    assert 'token "$tokens/grafana" read' in script
    env = services["influxdb-tokens"]["environment"]
    assert "USER drainwatch" in (DEPLOY / "Dockerfile").read_text()
    assert "--uid 10001" in (DEPLOY / "Dockerfile").read_text() and env["WORKER_UID"] == "10001"
    assert env["GRAFANA_UID"] == "472"  # the grafana/grafana image's user


def test_compose_worker_environment_loads_with_real_settings(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    env = filled_env(tmp_path)
    worker = compose["services"]["drainwatch-worker"]
    wenv = {k: interpolate(str(v), env) for k, v in worker["environment"].items()}
    # The token is mounted at /run/drainwatch/...; point at a test file to read it for real.
    write_token = tmp_path / "influxdb_write.token"
    write_token.write_text("test-only-write-token\n")
    wenv["DRAINWATCH_INFLUX_TOKEN_FILE"] = str(write_token)
    s = load_settings(env=wenv)
    assert s.kafka.bootstrap == "kafka:9092"
    assert s.influx.url == "http://influxdb:8086"
    assert s.influx.bucket == env["INFLUXDB_BUCKET"] == s.influx.database
    assert s.influx.token is not None and s.influx.token.reveal() == "test-only-write-token"
    assert s.accounting.nodes is None  # DRAINWATCH_NODES= (empty) means "no static basis"
    # The broker's internal listener is what the worker dials.
    assert (
        "INTERNAL://kafka:9092"
        in compose["services"]["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    )
    # Healthcheck probes the port and path the app serves.
    probe = " ".join(worker["healthcheck"]["test"])
    assert f"127.0.0.1:{s.worker.web_port}/health/" in probe


def test_compose_only_runs_commands_that_exist(compose: dict[str, Any]) -> None:
    parser = build_parser()
    for name, svc in compose["services"].items():
        if "build" in svc:
            args = parser.parse_args(svc["command"])  # SystemExit if the command is unknown
            assert args.command == svc["command"][0], name
            build = svc["build"]
            assert (DEPLOY / build["context"] / build["dockerfile"]).is_file()
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert 'ENTRYPOINT ["drainwatch"]' in dockerfile and "pip install" in dockerfile
    assert "ship" not in compose["services"]  # shippers arrive with the streaming issue


def _go() -> str | None:
    for cand in (os.environ.get("DRAINWATCH_GO"), shutil.which("go"), "/usr/local/go/bin/go"):
        if cand and Path(cand).is_file():
            return cand
    return None


@pytest.fixture(scope="module")
def composecheck() -> Path:
    """deploy/composecheck built with Go (compose-go: the loader `docker compose` uses)."""
    src = DEPLOY / "composecheck"
    digest = hashlib.sha256(
        b"".join((src / n).read_bytes() for n in ("main.go", "go.mod", "go.sum"))
    ).hexdigest()
    binary = REPO / ".drainwatch" / "bin" / f"composecheck-{digest[:12]}"
    if binary.is_file():
        return binary
    go = _go()
    if go is None:
        pytest.skip("no Go toolchain (set DRAINWATCH_GO): cannot build deploy/composecheck")
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=readonly")
    r = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if r.returncode != 0:
        msg = f"go build of deploy/composecheck failed:\n{r.stderr[-2000:]}"
        if os.environ.get("CI") or os.environ.get("DRAINWATCH_REQUIRE_STACK") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return binary


def run_composecheck(binary: Path, compose_file: Path, env: dict[str, str], tmp: Path) -> Any:
    env_file = tmp / "compose.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    return subprocess.run(
        [str(binary), str(compose_file), str(env_file)], capture_output=True, text=True, timeout=60
    )


def test_compose_spec_schema_and_interpolation(composecheck: Path, tmp_path: Path) -> None:
    """compose.yaml passes the Compose Specification schema and resolves as intended."""
    env = filled_env(tmp_path)
    r = run_composecheck(composecheck, COMPOSE, env, tmp_path)
    assert r.returncode == 0, r.stderr
    project = json.loads(r.stdout)
    services = project["services"]
    assert set(services) == SERVICES
    assert project["secrets"]["influxdb_admin_token"]["file"] == env["INFLUXDB_ADMIN_TOKEN_FILE"]
    assert_admin_token_holders(project)
    worker = services["drainwatch-worker"]
    assert worker["environment"]["DRAINWATCH_KAFKA_BOOTSTRAP"] == "kafka:9092"
    assert worker["environment"]["DRAINWATCH_NODES"] == ""
    assert worker["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert (
        services["influxdb"]["environment"]["DOCKER_INFLUXDB_INIT_PASSWORD"]
        == "test-only-influx-pw"
    )
    assert "$(cat /run/secrets/influxdb_admin_token)" in " ".join(
        services["influxdb"]["entrypoint"]
    )
    tokens = services["influxdb-tokens"]
    assert tokens["restart"] == "no"
    assert tokens["depends_on"]["influxdb"]["condition"] == "service_healthy"
    assert {v["source"] for v in tokens["volumes"] if v["type"] == "bind"} == {
        str(DEPLOY / "influxdb-tokens.sh")
    }
    assert worker["depends_on"]["influxdb-tokens"]["condition"] == "service_completed_successfully"
    assert worker["environment"]["DRAINWATCH_INFLUX_TOKEN_FILE"] == WRITE_TOKEN
    assert {v["source"] for v in services["grafana"]["volumes"] if v["type"] == "bind"} == {
        str(GRAFANA / "provisioning"),
        str(GRAFANA / "dashboards"),
    }


def assert_admin_token_holders(project: dict[str, Any]) -> None:
    """In a resolved project: only ADMIN_TOKEN_HOLDERS mount the admin token, and no service
    mounts another's scoped-token volume."""
    services = project["services"]
    holders = {n for n, svc in services.items() if "influxdb_admin_token" in secret_names(svc)}
    assert holders == ADMIN_TOKEN_HOLDERS
    readers = {
        vol: {n for n, svc in services.items() if vol in named_mounts(svc)} - {"influxdb-tokens"}
        for vol in ("influxdb-worker-token", "influxdb-grafana-token")
    }
    assert readers == {
        "influxdb-worker-token": {"drainwatch-worker"},
        "influxdb-grafana-token": {"grafana"},
    }
    for name in ("drainwatch-worker", "grafana"):
        (mount,) = [v for v in services[name]["volumes"] if v["target"] == "/run/drainwatch"]
        assert mount["read_only"] is True, name


def test_compose_with_the_tls_overlay_keeps_the_admin_token_confined(
    composecheck: Path, tmp_path: Path
) -> None:
    """compose.yaml + compose.external-tls.yaml, merged as `docker compose -f ... -f ...`."""
    env = filled_env(tmp_path)
    for name in ("KAFKA_KEYSTORE_FILE", "KAFKA_JAAS_FILE"):
        path = tmp_path / name.lower()
        path.write_text("test-only\n")
        env[name] = str(path)
    env["KAFKA_KEYSTORE_PASSWORD"] = "test-only-keystore-pw"
    env["KAFKA_EXTERNAL_BIND"] = "192.0.2.10"
    tls = DEPLOY / "compose.external-tls.yaml"
    env_file = tmp_path / "compose.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    r = subprocess.run(
        [str(composecheck), str(COMPOSE), str(tls), str(env_file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    project = json.loads(r.stdout)
    assert set(project["services"]) == SERVICES
    assert set(project["secrets"]) == {"influxdb_admin_token", "kafka_keystore", "kafka_jaas"}
    assert_admin_token_holders(project)
    kafka = project["services"]["kafka"]
    assert secret_names(kafka) == {"kafka_keystore", "kafka_jaas"}


# A stand-in for the influx 2.7 CLI: `bucket list --hide-headers` (id first), `auth list
# --json` and `auth create ... --json` (tab-indented JSON, "token" on its own line), tokens kept
# one a line in @STATE@/tokens (the first: the admin's), every argv logged.
INFLUX_STUB = r"""#!/bin/sh
state=@STATE@
printf '%s\n' "$*" >> "$state/argv"
[ "$INFLUX_TOKEN" = admin-secret-token ] || { echo unauthorized >&2; exit 1; }
case "$1 $2" in
"bucket list") printf '0a1b2c3d4e5f6071\tdrainwatch\tinfinite\n' ;;
"auth list")
    printf '[\n'
    while read -r t; do printf '\t{\n\t\t"token": "%s",\n\t},\n' "$t"; done < "$state/tokens"
    printf ']\n' ;;
"auth create")
    n=$(wc -l < "$state/tokens")
    t="tok-$n-$(echo "$*" | grep -o 'write-bucket\|read-bucket')"
    echo "$t" >> "$state/tokens"
    printf '{\n\t"id": "%s",\n\t"token": "%s",\n}\n' "$n" "$t" ;;
*) exit 2 ;;
esac
"""


def test_token_maker_script_makes_scoped_tokens_and_keeps_known_ones(tmp_path: Path) -> None:
    """deploy/influxdb-tokens.sh against a stand-in `influx` CLI (same commands, flags and
    JSON shape as influx 2.7): one write-only and one read-only token for the bucket's id,
    files of mode 600 in the two volumes; a second run keeps both; a token InfluxDB no longer
    knows is replaced. The admin token stays out of every argument and output line."""
    bindir, state = tmp_path / "bin", tmp_path / "influx-state"
    bindir.mkdir()
    state.mkdir()
    (state / "tokens").write_text("admin-secret-token\n")
    stub = bindir / "influx"
    stub.write_text(INFLUX_STUB.replace("@STATE@", str(state)))
    stub.chmod(0o755)
    secret = tmp_path / "admin_token"
    secret.write_text("admin-secret-token\n")
    tokens = tmp_path / "tokens"
    (tokens / "worker").mkdir(parents=True)
    (tokens / "grafana").mkdir()
    uid = str(os.getuid())
    env = {
        "PATH": f"{bindir}:/usr/bin:/bin",
        "ADMIN_TOKEN_FILE": str(secret),
        "TOKENS_DIR": str(tokens),
        "INFLUX_HOST": "http://influxdb:8086",
        "INFLUX_ORG": "drainwatch",
        "INFLUXDB_ADMIN_USER": "drainwatch-admin",
        "INFLUXDB_BUCKET": "drainwatch",
        "WORKER_UID": uid,
        "GRAFANA_UID": uid,
    }

    def run() -> str:
        r = subprocess.run(
            ["sh", str(DEPLOY / "influxdb-tokens.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        assert "admin-secret-token" not in r.stdout + r.stderr
        return r.stdout

    write, read = (
        tokens / "worker" / "influxdb_write.token",
        tokens / "grafana" / "influxdb_read.token",
    )
    out = run()
    assert "made (write on bucket drainwatch only)" in out
    assert "made (read on bucket drainwatch only)" in out
    assert write.read_text() == "tok-1-write-bucket\n"
    assert read.read_text() == "tok-2-read-bucket\n"
    for f in (write, read):
        assert f.stat().st_mode & 0o777 == 0o600
    creates = [a for a in (state / "argv").read_text().splitlines() if a.startswith("auth create")]
    assert creates == [
        "auth create --user drainwatch-admin --description drainwatch write drainwatch "
        "--write-bucket 0a1b2c3d4e5f6071 --json",
        "auth create --user drainwatch-admin --description drainwatch read drainwatch "
        "--read-bucket 0a1b2c3d4e5f6071 --json",
    ]
    assert "admin-secret-token" not in (state / "argv").read_text()
    out = run()  # InfluxDB knows both: kept
    assert out.count(" kept") == 2 and write.read_text() == "tok-1-write-bucket\n"
    (state / "tokens").write_text("admin-secret-token\ntok-2-read-bucket\n")  # write one gone
    out = run()
    assert f"{write} made" in out and f"{read} kept" in out
    assert write.read_text() == "tok-2-write-bucket\n"


def test_compose_refuses_missing_passwords_and_unknown_keys(
    composecheck: Path, tmp_path: Path
) -> None:
    r = run_composecheck(composecheck, COMPOSE, env_example(), tmp_path)  # passwords empty
    assert r.returncode == 1
    assert "GRAFANA_ADMIN_PASSWORD" in r.stderr and "INFLUXDB_ADMIN_PASSWORD" in r.stderr
    bad = tmp_path / "compose.yaml"
    bad.write_text(COMPOSE.read_text().replace("    healthcheck:", "    healthchek:", 1))
    r = run_composecheck(composecheck, bad, filled_env(tmp_path), tmp_path)
    assert r.returncode == 1 and "healthchek" in r.stderr


def test_docker_compose_config_validates(tmp_path: Path) -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("docker CLI not installed; structural checks above cover compose.yaml")
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(
            "the docker compose plugin is not installed (docker CLI only, no engine); "
            "deploy/composecheck (compose-go) validates compose.yaml instead"
        )
    env = filled_env(tmp_path)
    env_file = tmp_path / "env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    r = subprocess.run(
        [docker, "compose", "-f", str(COMPOSE), "--env-file", str(env_file), "config", "-q"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    # Missing required password: compose must refuse.
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env_example().items()))
    r = subprocess.run(
        [docker, "compose", "-f", str(COMPOSE), "--env-file", str(env_file), "config", "-q"],
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0 and "PASSWORD" in r.stderr


# --- Grafana provisioning -----------------------------------------------------------------


def test_grafana_datasource_provisioning(compose: dict[str, Any]) -> None:
    doc = load_yaml(GRAFANA / "provisioning" / "datasources" / "influxdb.yaml")
    assert doc["apiVersion"] == 1
    (ds,) = doc["datasources"]
    assert ds["type"] == "influxdb" and ds["uid"] == DS_UID and ds["access"] == "proxy"
    # InfluxQL (no "version: Flux"), database drainwatch, token from the secret file.
    assert ds["jsonData"].get("version", "InfluxQL") == "InfluxQL"
    assert ds["jsonData"]["httpHeaderName1"] == "Authorization"
    # the read-only token, from the volume the grafana service mounts there
    assert ds["secureJsonData"]["httpHeaderValue1"] == f"Token $__file{{{READ_TOKEN}}}"
    mount = named_mounts(compose["services"]["grafana"])["influxdb-grafana-token"]
    assert READ_TOKEN.startswith(mount + "/")
    genv = compose["services"]["grafana"]["environment"]
    text = (GRAFANA / "provisioning" / "datasources" / "influxdb.yaml").read_text()
    assert set(referenced_vars(text)) <= set(genv)
    env = env_example()
    assert interpolate(genv[ds["jsonData"]["dbName"][2:-1]], env) == Settings().influx.database
    assert interpolate(genv[ds["url"][2:-1]], env) == "http://influxdb:8086"


def test_grafana_dashboard_provider_points_at_mounted_dashboards(compose: dict[str, Any]) -> None:
    doc = load_yaml(GRAFANA / "provisioning" / "dashboards" / "drainwatch.yaml")
    assert doc["apiVersion"] == 1
    (prov,) = doc["providers"]
    assert prov["type"] == "file"
    mounts = dict(v.split(":")[:2] for v in compose["services"]["grafana"]["volumes"])
    assert mounts["../grafana/dashboards"] == prov["options"]["path"]
    assert mounts["../grafana/provisioning"] == "/etc/grafana/provisioning"


_FROM = re.compile(r'\bFROM\s+"([^"]+)"', re.I)


def check_influxql(query: str) -> str:
    """Every identifier in the query belongs to the measurement it reads; returns it."""
    (measurement,) = _FROM.findall(query)
    assert measurement in SCHEMA, measurement
    schema = SCHEMA[measurement]
    select, _, rest = query.partition(" FROM ")
    assert select.upper().startswith("SELECT ")
    aliases = set(re.findall(r'\bAS\s+"([^"]+)"', select, re.I))
    for ident in re.findall(r'"([^"]+)"', select):
        assert ident in schema["fields"] or ident in aliases, (ident, query)
    where, _, group = rest.partition(" GROUP BY ")
    for ident in re.findall(r'"([^"]+)"', where)[1:]:  # [0] is the measurement
        assert ident in schema["tags"] | schema["fields"], (ident, query)
    for value in re.findall(r'"window"\s*=\s*\'([^\']+)\'', where):
        assert value in WINDOWS, (value, query)
    assert "$timeFilter" in where, query
    for ident in re.findall(r'"([^"]+)"', group):
        assert ident in schema["tags"], (ident, query)
    return measurement


def test_check_influxql_rejects_unknown_names() -> None:
    with pytest.raises(AssertionError):
        check_influxql('SELECT "drain_pct" FROM "drain" WHERE $timeFilter')
    with pytest.raises(AssertionError):
        check_influxql(
            'SELECT "drain_node_seconds" FROM "drain_job" WHERE "node" = \'x\' AND $timeFilter'
        )
    with pytest.raises(AssertionError):
        check_influxql(
            'SELECT "drain_node_seconds" FROM "drain" WHERE "window" = \'week\' AND $timeFilter'
        )


def test_dashboard_panels_queries_and_datasource() -> None:
    dash = json.loads((GRAFANA / "dashboards" / "drain.json").read_text(encoding="utf-8"))
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36
    panels = dash["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    measured: set[tuple[str, str]] = set()
    cells: set[tuple[int, int]] = set()
    for p in panels:
        assert p["datasource"] == {"type": "influxdb", "uid": DS_UID}, p["title"]
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        mine = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not (mine & cells), f"panel {p['title']!r} overlaps another"
        cells |= mine
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == DS_UID and t["rawQuery"] is True
            m = check_influxql(t["query"])
            measured |= {(m, f) for f in re.findall(r'"([^"]+)"', t["query"].split(" FROM ")[0])}
    fields_used = {f for _, f in measured}
    for needed in (
        "drain_pct_static",
        "drain_pct_dynamic",
        "unallocated_idle_node_seconds",
        "unaccounted_node_seconds",
    ):
        assert needed in fields_used, needed
    jobs = json.loads((GRAFANA / "dashboards" / "jobs.json").read_text(encoding="utf-8"))
    sliding = [
        t["query"] for p in jobs["panels"] for t in p["targets"] if 'FROM "drain_job"' in t["query"]
    ]
    assert sliding and all(check_influxql(q) == "drain_job" for q in sliding)  # drain by job


# --- example TOML -----------------------------------------------------------------------------


def test_example_toml_documents_every_setting_and_loads() -> None:
    path = DEPLOY / "drainwatch.example.toml"
    text = path.read_text(encoding="utf-8")
    doc = tomllib.loads(text)
    section = ""
    keys: set[str] = set()
    for line in text.splitlines():
        if m := re.fullmatch(r"\[(\w+)\]", line.strip()):
            section = m.group(1)
        elif m := re.fullmatch(r"#?\s?(\w+) = .*", line.strip()):
            keys.add(f"{section}.{m.group(1)}" if section else m.group(1))
    for spec in SPECS:
        assert spec.toml_key in keys, f"{spec.toml_key} not documented"
        assert spec.env in text, f"{spec.env} not documented"
    # Every value it sets is the default, so it loads to the default settings.
    assert load_settings(path, env={}) == Settings()
    assert doc["kafka"]["bootstrap"] == Settings().kafka.bootstrap
    # It is made from the declarations in streams/config/sections.py.
    assert text == example_toml(), "stale: python -m streams.config --write-docs"


def test_external_listener_is_loopback_plaintext_or_sasl_ssl() -> None:
    """compose.yaml publishes the plaintext EXTERNAL listener on loopback by default; the TLS
    override switches it to SASL_SSL and makes the bind address a required choice."""
    base = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert base["services"]["kafka"]["ports"] == [
        "${KAFKA_EXTERNAL_BIND:-127.0.0.1}:${KAFKA_EXTERNAL_PORT:-9094}:9094"
    ]
    assert "KAFKA_EXTERNAL_BIND=127.0.0.1" in (DEPLOY / "env.example").read_text()

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!override", lambda loader, node: loader.construct_sequence(node))
    tls = yaml.load((DEPLOY / "compose.external-tls.yaml").read_text(), Loader=Loader)
    env = tls["services"]["kafka"]["environment"]
    assert "EXTERNAL:SASL_SSL" in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
    assert env["KAFKA_SASL_ENABLED_MECHANISMS"] == "PLAIN"
    assert "${KAFKA_KEYSTORE_PASSWORD:?" in env["KAFKA_SSL_KEYSTORE_PASSWORD"]
    assert tls["services"]["kafka"]["ports"][0].startswith("${KAFKA_EXTERNAL_BIND:?")
    assert set(tls["secrets"]) == {"kafka_keystore", "kafka_jaas"}
