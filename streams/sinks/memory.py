"""A sink that keeps everything in memory: for tests and for callers that read the rows."""

from __future__ import annotations

from collections.abc import Iterable

from streams.contracts import Row, Table
from streams.format import format_rows


class MemorySink:
    def __init__(self) -> None:
        self.tables: dict[str, Table] = {}
        self.rows: dict[str, list[tuple[object, ...]]] = {}
        self.documents: dict[str, bytes] = {}
        self.committed = False

    def declare(self, table: Table) -> None:
        self.tables.setdefault(table.file, table)
        self.rows.setdefault(table.file, [])

    def write(self, table: Table, rows: Iterable[Row]) -> int:
        self.declare(table)
        new = [tuple(r) for r in rows]
        self.rows[table.file] += new
        return len(new)

    def document(self, name: str, data: bytes) -> None:
        self.documents[name] = data

    def commit(self) -> None:
        self.committed = True

    def abort(self) -> None:
        self.rows.clear()
        self.documents.clear()

    def formatted(self, file: str) -> list[list[str]]:
        """Rows of one table as the CSV sink would write them."""
        return list(format_rows(self.tables[file], self.rows[file]))
