"""What a request handler needs from its app: the store and the configuration."""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app

from cqels_endpoint.config import ServerConfig
from static_store import StaticStore

EXTENSION = "cqels_endpoint"


@dataclass(frozen=True)
class Endpoint:
    store: StaticStore
    config: ServerConfig


def endpoint() -> Endpoint:
    """The store and configuration of the app serving the current request."""
    return current_app.extensions[EXTENSION]
