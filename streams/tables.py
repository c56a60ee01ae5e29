"""Output tables: the name, columns and meaning of every file a stage writes.

A stage declares its tables once; sinks format rows through the column kinds
(:mod:`streams.format`), so a CSV file, the in-memory sink and (later) an InfluxDB measurement
all read the same declaration, and docs/outputs.md is generated from it
(``python -m streams.tables`` prints it; a test keeps the file in step).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from streams.format import FORMATTERS

Row = Sequence[Any]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: str  # a key of streams.format.FORMATTERS
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in FORMATTERS:
            raise ValueError(f"column {self.name}: unknown kind {self.kind!r}")


@dataclass(frozen=True, slots=True)
class Table:
    """One output: ``file`` is its name in the output directory (``.csv`` or ``.tsv``)."""

    file: str
    columns: tuple[Column, ...]
    doc: str
    when: str = "always"  # when the file is written (e.g. "with --jobs")
    header: bool = True  # the .tsv lookup table a scheduler hook reads has no header
    delimiter: str = ","
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(c.name for c in self.columns))

    def format(self, rows: Iterable[Row]) -> Iterable[list[str]]:
        fmts = [FORMATTERS[c.kind] for c in self.columns]
        n = len(fmts)
        for r in rows:
            if len(r) != n:
                raise ValueError(f"{self.file}: row of {len(r)} values for {n} columns")
            yield [f(v) for f, v in zip(fmts, r, strict=True)]


def cols(*spec: tuple[str, str] | tuple[str, str, str]) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in spec)


def all_tables() -> list[tuple[str, Table]]:
    """Every table of every stage, as (engine, table), in documentation order."""
    from streams.stages import drain, jobs, samples

    out: list[tuple[str, Table]] = []
    for engine, mod in (("drain", drain), ("jobs", jobs), ("samples", samples)):
        out += [(engine, t) for t in mod.TABLES]
    return out


def outputs_markdown() -> str:
    """The generated part of docs/outputs.md."""
    lines: list[str] = []
    engine = ""
    for eng, t in all_tables():
        if eng != engine:
            engine = eng
            lines += [f"### {eng} (`summary_{eng}.json`)", ""]
        lines += [f"#### `{t.file}` ({t.when})", "", t.doc, ""]
        lines += ["| column | kind | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{c.name}` | {c.kind} | {c.doc} |" for c in t.columns]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(outputs_markdown(), end="")
