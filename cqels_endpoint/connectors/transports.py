"""The transport of each kind of source and sink (``specs.SOURCE_KINDS``, ``specs.SINK_KINDS``)."""

from __future__ import annotations

from cqels_endpoint.connectors.mqtt import MqttSink, MqttSource
from cqels_endpoint.connectors.websocket import WebSocketSource

SOURCE_TRANSPORTS = {"mqtt": MqttSource, "websocket": WebSocketSource}
SINK_TRANSPORTS = {"mqtt": MqttSink}
