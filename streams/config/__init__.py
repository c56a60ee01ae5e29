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

The package: ``declare`` (how a setting is declared), ``sections`` (the declarations),
``settings`` (:class:`Settings` and :data:`SPECS`), ``load`` (the loader), ``docs`` (the
documents derived from the declarations).
"""

from __future__ import annotations

from streams.config.declare import (
    CONFIG_ENV,
    ENV_PREFIX,
    KINDS,
    LOG_FORMATS,
    LOG_LEVELS,
    NON_SETTING_ENV,
    NON_SETTING_ENV_PREFIXES,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    STORES,
    Secret,
    setting,
)
from streams.config.docs import (
    EXAMPLE_TOML,
    README,
    README_BEGIN,
    README_END,
    ROOT,
    example_toml,
    readme_table,
    write_docs,
)
from streams.config.load import load_settings, setup_logging
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
from streams.config.settings import SPECS, Settings, Spec

# defined with the other errors, so the CLI catches it without loading this package
from streams.errors import ConfigError as ConfigError

__all__ = [
    "ConfigError",
    "CONFIG_ENV",
    "ENV_PREFIX",
    "KINDS",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "NON_SETTING_ENV",
    "NON_SETTING_ENV_PREFIXES",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "STORES",
    "Secret",
    "setting",
    "AccountingSettings",
    "AlertsSettings",
    "BoundsSettings",
    "GeneralSettings",
    "InfluxSettings",
    "JobsSettings",
    "KafkaSettings",
    "SamplesSettings",
    "WorkerSettings",
    "SPECS",
    "Settings",
    "Spec",
    "EXAMPLE_TOML",
    "README",
    "README_BEGIN",
    "README_END",
    "ROOT",
    "example_toml",
    "readme_table",
    "write_docs",
    "load_settings",
    "setup_logging",
]
