"""Loading: defaults < TOML file < ``DRAINWATCH_*`` environment, every value coerced and
checked against its declaration, secrets from env or files only; and the logging setup."""

from __future__ import annotations

import argparse
import difflib
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# defined with the other errors, so the CLI catches it without loading this module
from streams import logs
from streams.config.declare import (
    CONFIG_ENV,
    ENV_PREFIX,
    NON_SETTING_ENV,
    NON_SETTING_ENV_PREFIXES,
    Secret,
    instant_ms,
)
from streams.config.settings import SECTION_TYPES, SPECS, Settings, Spec, by_section, env_of
from streams.errors import ConfigError as ConfigError


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
    sections = {a: SECTION_TYPES[a](**kw) for a, kw in by_section(values).items()}
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
        return instant_ms(raw, where)
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
                env_of("kafka.sasl_username"),
                f"required with security protocol {k.security_protocol}",
            )
        if k.sasl_password is None:
            raise ConfigError(
                env_of("kafka.sasl_password"),
                f"required with security protocol {k.security_protocol} "
                f"(or {env_of('kafka.sasl_password')}_FILE)",
            )
    if not s.uses_ssl:
        for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_key_password"):
            if getattr(k, key) is not None:
                raise ConfigError(
                    env_of(f"kafka.{key}"),
                    f"set but security protocol is {k.security_protocol} (use SSL or SASL_SSL)",
                )
    if k.ssl_keyfile is not None and k.ssl_certfile is None:
        raise ConfigError(env_of("kafka.ssl_keyfile"), "needs kafka_ssl_certfile too")
    if w.broker_heartbeat_interval * 3 > w.broker_session_timeout:
        raise ConfigError(
            env_of("worker.broker_heartbeat_interval"),
            f"{w.broker_heartbeat_interval:g} s must be at most a third of "
            f"broker_session_timeout ({w.broker_session_timeout:g} s)",
        )
    if not k.topic_prefix.replace(".", "").replace("-", "").replace("_", "").isalnum():
        raise ConfigError(
            env_of("kafka.topic_prefix"),
            f"{k.topic_prefix!r}: topic names allow letters, digits, '.', '_', '-'",
        )
    if s.bounds.not_before >= s.bounds.not_after:
        raise ConfigError(env_of("bounds.not_before"), "must be earlier than not_after")
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
