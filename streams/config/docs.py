"""The documents derived from the declarations: the example TOML and the README's settings
table (``python -m streams.config --write-docs``; a test keeps them in step)."""

from __future__ import annotations

import json
import textwrap
from dataclasses import fields
from pathlib import Path
from typing import Any

from streams.config.settings import SECTION_TYPES, SPECS, Settings, Spec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TOML = ROOT / "deploy" / "drainwatch.example.toml"
README = ROOT / "README.md"
README_BEGIN = "<!-- settings table: python -m streams.config --write-docs; a test checks it -->"
README_END = "<!-- end of the settings table -->"
_EXAMPLE_HEADER = """\
# drainwatch settings: every key, with its default and its environment variable.
# Generated from streams/config/sections.py (python -m streams.config --write-docs); edit it there.
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
        title = (SECTION_TYPES[sf.name].__doc__ or "").strip().rstrip(".")
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
