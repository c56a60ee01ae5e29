"""Where tests find the repository and the shared public data (``../shared/data``, optional)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
