"""Rejected input records: what was wrong, where, and the text itself.

Parsers never raise on one bad record; they yield a Reject (or count it) and go on, so a bad line
never loses the good lines around it. ``reason`` is a short stable key used for counting.
"""

from __future__ import annotations

import os
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
    """One rejected record. ``lineno``: the line of ``source`` the record was read from, from 1,
    counted as ``bytes.splitlines`` cuts (a line ends at LF, CRLF or a bare CR), also for a
    record rejected after parsing (an event of a job's line, a sample): every reject of a file
    names its line. A record of no file (a Kafka message, a Slurm snapshot) is placed by its
    message instead (a dead letter's topic, partition and offset) and has line 0."""

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


def shown_path(path: str | os.PathLike[str]) -> str:
    """A file name as messages, rejects and summaries show it: valid UTF-8 as it is, each byte
    that is not (a name read from argv keeps it as a lone surrogate, surrogateescape) as a
    backslash escape, ``jobs-\\xff.jsonl``; so no UTF-8 writer (orjson, a CSV or TSV file)
    fails on it (issue 31, class 4)."""
    raw = os.fsencode(path)
    return raw.decode("utf-8", "backslashreplace")
