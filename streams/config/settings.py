"""The effective configuration (:class:`Settings`, one object per section) and the flat
table of every setting (:data:`SPECS`), walked from the section dataclasses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

# defined with the other errors, so the CLI catches it without loading this module
from streams import logs
from streams.errors import ConfigError as ConfigError

if TYPE_CHECKING:  # ssl costs ~10 ms to import: only the worker's Kafka client needs it
    import ssl
from streams.config.declare import ENV_PREFIX
from streams.config.sections import (
    AccountingSettings,
    AlertsSettings,
    BoundsSettings,
    GeneralSettings,
    InfluxSettings,
    JobsSettings,
    KafkaSettings,
    SamplesSettings,
    WorkerSettings,
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


SECTION_TYPES: dict[str, Any] = {f.name: f.default_factory for f in fields(Settings)}
# every setting, in declaration order, from the section dataclasses
SPECS: tuple[Spec, ...] = tuple(
    Spec(attr=sf.name, key=f.name, section=sf.metadata.get("toml", sf.name), **f.metadata)
    for sf in fields(Settings)
    for f in fields(SECTION_TYPES[sf.name])
)
_BY_NAME = {s.name: s for s in SPECS}
_BY_PATH = {f"{s.attr}.{s.key}": s for s in SPECS}


def env_of(path: str) -> str:
    """The environment variable of the setting at ``section.field`` (errors name it)."""
    return _BY_PATH[path].env


def by_section(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Setting name -> value, grouped by section attribute and field name."""
    out: dict[str, dict[str, Any]] = {}
    for name, v in values.items():
        spec = _BY_NAME[name]
        out.setdefault(spec.attr, {})[spec.key] = v
    return out
