"""Streams in and emissions out beyond the HTTP request: the event syntaxes every producer shares
(``events``), the fan-out of a query's emissions to its consumers (``subscriptions``), and the
sources and sinks that connect the engine to MQTT brokers and WebSockets."""
