"""The live tests' one fixture: a :class:`~tests.integration.test_live_drain.Live` (own topic
prefix, consumer group and database) whose workers and shippers are stopped afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_live_drain import Live


@pytest.fixture
def live(stack: Any, influx: Any, tmp_path: Path) -> Iterator[Live]:
    run = Live(stack, influx, tmp_path)
    yield run
    run.stop()
