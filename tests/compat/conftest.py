"""The compatibility tests run once per anyio backend (asyncio, trio), as the engine's do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.backends import BACKENDS, use_backend


@pytest.fixture(params=BACKENDS, autouse=True)
def async_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from use_backend(request.param)
