"""``--adjust-out FILE``: seed 002's scheduler-facing fair-share ADJUST table, rewritten
atomically at each 3-minute tick (the seed's scheduler reads it every tick; its hook bsearches a
table sorted by holder).

:func:`write_adjust_table` is the one writer. The live agent calls it (through
:class:`AdjustTableFile`) at each tick it closes: a reader sees the old table or the new one,
never half of one (temporary file + ``os.replace``), and the file keeps its mode. The replay
points the same hook at its staged copy of FILE, so FILE changes only in the replay's one
commit, to the run's last table (``fairshare_adjust.tsv``).
"""

from __future__ import annotations

from pathlib import Path

from models.jobs.shortjobs import ShortJobPenalty, adjust_table_tsv
from streams.atomic import atomic_file, make_dirs


def write_adjust_table(path: str | Path, model: ShortJobPenalty) -> None:
    """Replace ``path`` atomically with the model's ADJUST table at its last closed tick
    (``kind<TAB>holder<TAB>A(t)``, groups then users, sorted by holder in byte order)."""
    data = adjust_table_tsv(model.tables()).encode()
    with atomic_file(path) as f:
        f.write(data)


class AdjustTableFile:
    """The tick hook of ``--adjust-out FILE``: makes the file's directories on first use and
    counts its writes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.writes = 0

    def __call__(self, model: ShortJobPenalty) -> None:
        if self.writes == 0:
            make_dirs(self.path.parent)
        write_adjust_table(self.path, model)
        self.writes += 1
