"""The demo's outputs, made once for the report tests (about 15 s): a simulated workload with
one finding of each kind, replayed by the three engines, and its report."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams import demo


@pytest.fixture(scope="session")
def demo_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    assert demo.main(str(out)) == 0
    return out
