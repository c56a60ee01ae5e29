"""Every drain model test runs with each way a batch can be accounted (models.drain.accountant
KERNELS: the compiled loops of native/ where they are built, and numpy), which must agree."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from models.drain import accountant


@pytest.fixture(autouse=True, scope="module", params=accountant.KERNELS)
def kernel(request: pytest.FixtureRequest) -> Iterator[str]:
    saved = accountant.KERNELS
    accountant.KERNELS = (request.param,)
    yield request.param
    accountant.KERNELS = saved
