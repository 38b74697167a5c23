"""The server speaks WebSocket (uvicorn's ``websockets`` protocol): a handshake reaches the ASGI app,
which refuses it while no route takes WebSocket connections (a 403 to the handshake)."""

from __future__ import annotations

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect


def test_a_websocket_handshake_reaches_the_app_and_is_refused(live_endpoint) -> None:
    url = "ws" + live_endpoint.base_url.removeprefix("http") + "/streams/anything"
    with pytest.raises(InvalidStatus) as refused:
        connect(url, open_timeout=10)
    assert refused.value.response.status_code == 403
    # The server goes on answering plain HTTP.
    assert live_endpoint.get("/health").status == 200
