"""What a request handler needs from its app: the store, the continuous engine and the configuration."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flask import Flask, current_app

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.connectors.registry import FILE_NAME as CONNECTORS_FILE
from cqels_endpoint.connectors.registry import Connectors
from cqels_endpoint.connectors.subscriptions import Subscriptions
from cqels_endpoint.connectors.transports import SINK_TRANSPORTS, SOURCE_TRANSPORTS
from static_store import StaticStore

if TYPE_CHECKING:
    from cqels_endpoint.engine import Engine
    from cqels_endpoint.spark.session import SparkSessionHolder

EXTENSION = "cqels_endpoint"


@dataclass(frozen=True)
class Endpoint:
    """``spark``: the session holder of the Spark cache engine the app built (None otherwise);
    ``owns_engine``: the app built ``engine`` and closes it in ``close()``."""

    store: StaticStore
    config: ServerConfig
    engine: Engine
    spark: SparkSessionHolder | None = None
    owns_engine: bool = True
    subscriptions: Subscriptions = field(init=False)  # the clients of GET /queries/{name}/results
    connectors: Connectors = field(init=False)  # the sources and sinks (/sources, /sinks)

    def __post_init__(self) -> None:
        config = self.config
        subscriptions = Subscriptions(self.engine, replay=config.replay_buffer, queue=config.subscriber_queue)
        object.__setattr__(self, "subscriptions", subscriptions)
        connectors = Connectors(
            self.engine, subscriptions, config.stream_base, None if config.memory else config.data_dir / CONNECTORS_FILE,
            SOURCE_TRANSPORTS, SINK_TRANSPORTS,
        )
        object.__setattr__(self, "connectors", connectors)

    def start(self) -> None:
        """Begin starting the SparkSession in the background, so the first cache build does not
        wait for a JVM (``cqels serve`` calls this before it listens)."""
        if self.spark is not None:
            self.spark.start()

    def close(self) -> None:
        """Stop the sources and sinks, end the results streams, close the engine the app built and
        stop its SparkSession; the store stays open (its owner closes it)."""
        self.connectors.close()
        self.subscriptions.close()
        if self.owns_engine:
            self.engine.close()
        if self.spark is not None:
            self.spark.stop()


def endpoint(app: Flask | None = None) -> Endpoint:
    """The store, engine and configuration of ``app``, by default the app serving the current request."""
    return (app or current_app).extensions[EXTENSION]
