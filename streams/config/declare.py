"""How a setting is declared: the kinds, :func:`setting` (a dataclass field whose metadata
holds the env name, kind, bounds and help), :class:`Secret`, and what every section shares."""

from __future__ import annotations

from dataclasses import field, fields
from pathlib import Path
from typing import Any

from streams import logs
from streams.errors import ConfigError

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
        value = instant_ms(default, env)
    elif kind == "path" and default is not None:
        value = Path(default)
    return field(default=value, metadata=meta)


def instant_ms(raw: Any, where: str) -> int:
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


def masked_repr(obj: Any) -> str:
    """``Name(field=value, ...)`` with every value masked (streams.logs.mask)."""
    inner = ", ".join(f"{f.name}={logs.mask(repr(getattr(obj, f.name)))}" for f in fields(obj))
    return f"{type(obj).__name__}({inner})"


class Section:
    """What every section shares: a repr that shows no credential (secrets, URL passwords)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return masked_repr(self)
