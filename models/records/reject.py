"""Rejected input records: what was wrong, where, and the text itself.

Parsers never raise on one bad record; they yield a Reject (or count it) and go on, so a bad line
never loses the good lines around it. ``reason`` is a short stable key used for counting.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass


class RecordError(ValueError):
    """An input record that cannot be used; ``reason`` is a short stable key for counting.
    Each parser subclasses it, so callers can catch one family or all of them."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(slots=True, frozen=True)
class Reject:
    reason: str
    source: str
    lineno: int
    text: str

    def tsv(self) -> str:
        """One line for a --rejects file: source, line number, reason, the original text."""
        text = self.text.rstrip("\r\n").replace("\t", "\\t")
        return f"{self.source}\t{self.lineno}\t{self.reason}\t{text}\n"


def count_reasons(rejects: list[Reject]) -> Counter[str]:
    return Counter(r.reason for r in rejects)
