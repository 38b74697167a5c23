"""Fixtures of the HTTP tests (the servers themselves are in the root conftest.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import LiveEndpoint


@pytest.fixture
def endpoint(live_endpoint: LiveEndpoint) -> LiveEndpoint:
    """The session's shared server, its store emptied first. A module that needs data in it
    overrides this fixture and loads it."""
    live_endpoint.reset()
    return live_endpoint
