"""Server configuration: one frozen dataclass, filled from ``cqels serve`` flags or the environment.

Every field has a command-line flag and a ``CQELS_*`` environment twin (the flag wins):

=======================  =========================  =============================  =============================
field                    flag                       environment                    default
=======================  =========================  =============================  =============================
``host``                 ``--host``                 ``CQELS_HOST``                 ``127.0.0.1`` (loopback only)
``port``                 ``--port``                 ``CQELS_PORT``                 ``7878``
``data_dir``             ``--data-dir``             ``CQELS_DATA_DIR``             ``./cqels-data``
``memory``               ``--memory``               ``CQELS_MEMORY``               off (keep the store on disk)
``auth_token``           ``--auth-token``           ``CQELS_AUTH_TOKEN``           none (writes open)
``query_timeout``        ``--query-timeout``        ``CQELS_QUERY_TIMEOUT``        30 seconds (0: none)
``max_body_mb``          ``--max-body-mb``          ``CQELS_MAX_BODY_MB``          64 MiB
``allow_remote``         ``--allow-remote``         ``CQELS_ALLOW_REMOTE``         off (LOAD/SERVICE refused)
``demo``                 ``--demo``                 ``CQELS_DEMO``                 off
``demo_stream``          ``--demo-stream``          ``CQELS_DEMO_STREAM``          ``on`` (with ``--demo``)
``cache_engine``         ``--cache-engine``         ``CQELS_CACHE_ENGINE``         ``spark`` (or ``local``)
``spark_master``         ``--spark-master``         ``CQELS_SPARK_MASTER``         none (``local[*]``)
``spark_parquet_rows``   ``--spark-parquet-rows``   ``CQELS_SPARK_PARQUET_ROWS``   500000 (0: always collect)
``rebuild_debounce_ms``  ``--rebuild-debounce-ms``  ``CQELS_REBUILD_DEBOUNCE_MS``  200 ms
``stream_base``          ``--stream-base``          ``CQELS_STREAM_BASE``          ``urn:cqels:stream:``
``dialect``              ``--dialect``              ``CQELS_DIALECT``              ``auto``
``lateness_ms``          ``--lateness-ms``          ``CQELS_LATENESS_MS``          0 ms (no event may be late)
``max_future_ms``        ``--max-future-ms``        ``CQELS_MAX_FUTURE_MS``        0 (no bound)
``threads``              ``--threads``              ``CQELS_THREADS``              64
``replay_buffer``        ``--replay-buffer``        ``CQELS_REPLAY_BUFFER``        1000 emissions per query
``subscriber_queue``     ``--subscriber-queue``     ``CQELS_SUBSCRIBER_QUEUE``     256 emissions per subscriber
``keepalive_s``          ``--keepalive-s``          ``CQELS_KEEPALIVE_S``          15 seconds
``log_level``            ``--log-level``            ``CQELS_LOG_LEVEL``            ``INFO``
``read_only``            ``--read-only``            ``CQELS_READ_ONLY``            off (writes allowed)
``cors_origins``         ``--cors-origin``          ``CQELS_CORS_ORIGIN``          none (no CORS headers)
``max_window_triples``   ``--max-window-triples``   ``CQELS_MAX_WINDOW_TRIPLES``   0 (no bound)
``max_tick_rows``        ``--max-tick-rows``        ``CQELS_MAX_TICK_ROWS``        0 (no bound)
``limit_action``         ``--limit-action``         ``CQELS_LIMIT_ACTION``         ``fail``
=======================  =========================  =============================  =============================

``cache_engine`` computes the cached static sub-patterns of registered queries: ``spark`` on one
long-lived SparkSession (``spark_master``; started in the background when the server starts),
``local`` with pyoxigraph in the server process, for small deployments. A burst of store changes
rebuilds the caches it touches once, ``rebuild_debounce_ms`` after the last change. A Spark build of
more than ``spark_parquet_rows`` rows is written as Parquet and read back in parts rather than
collected to the driver (0: every build is collected); unless ``memory``, its Parquet files and the
snapshots its jobs read are kept under ``data_dir`` (``spark-caches/``, ``spark-snapshots/``), else
in a temporary directory (``spark.job.SparkCacheEngine``); those a killed server left behind are
removed by the next build (``spark.export.work_directory``).

``lateness_ms`` is the lateness L of docs/ARCHITECTURE.md, "Windows and time": events up to that
much older than their stream's latest one are buffered and released in timestamp order once the
watermark passes them; older ones get a 409. ``max_future_ms`` (0: off) bounds how far ahead of
the server's wall clock an event may be; further ones get a 422. Unless ``memory``, every stream's
clock is kept in ``data_dir`` (``streams.json``) and restored at start (``engine.clocks``).

``stream_base`` names the streams pushed to by a short name: ``POST /streams/rfid`` pushes to
``<stream_base>rfid`` (``POST /streams/<percent-encoded IRI>`` names any stream in full).

``dialect`` is what a continuous query registered without ``?dialect=`` means
(``query.dialects``): ``auto`` reads a ``REGISTER QUERY Name AS`` query as CQELS-QL 2.0 and any
other as CQELS 1; ``cqels`` or ``cqels2`` reads every such query in that dialect.

``threads`` is the number of worker threads of the requests that evaluate or write (one-shot
queries, updates, pushes; as many again for the Flask routes): it bounds how many run at once.
A ``/queries/{name}/results`` stream holds none (it waits on the event loop), so subscribers are
not bounded by it.
Each query keeps its last ``replay_buffer`` emissions for ``Last-Event-ID`` resumes; a subscriber
more than ``subscriber_queue`` emissions behind is disconnected (a WebSocket reader may ask for a
smaller buffer and another overflow policy: ``http/sockets.py``); an idle stream gets a keep-alive
every ``keepalive_s`` seconds (``http/results.py``).

``max_window_triples`` bounds the triples of one window state, ``max_tick_rows`` the rows the
operators of one continuous query produce in one evaluation (``runtime.limits``): past a bound the
query fails (status ``failed`` in ``/queries``, an ``error`` event to its subscribers), or, with
``limit_action`` ``shed``, a full window drops the new triples (counted); the process runs on.

``log_level`` is the level of the server's logging (Python ``logging``); Spark's JVM and Py4J log
through it too, never below WARNING (``spark/session.py``). ``read_only`` refuses every write
(``/update``, ``/store`` writes, stream pushes, query registration and deletion, instances) with 403.
``cors_origins`` are the browser origins (``https://app.example.org``, or ``*``) allowed to call the
endpoint across origins; the flag repeats or takes a comma list; without one no CORS header is sent.

>>> ServerConfig().max_body_bytes
67108864
>>> ServerConfig(port=0).port
0
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7878
DEFAULT_DATA_DIR = Path("cqels-data")
DEFAULT_QUERY_TIMEOUT = 30.0
DEFAULT_MAX_BODY_MB = 64.0
CACHE_ENGINES = ("spark", "local")
DEFAULT_CACHE_ENGINE = "spark"
DEFAULT_REBUILD_DEBOUNCE_MS = 200
DEFAULT_SPARK_PARQUET_ROWS = 500_000  # also SparkCacheEngine's default (spark.job.PARQUET_ROWS)
DEFAULT_STREAM_BASE = "urn:cqels:stream:"
DIALECTS = ("auto", "cqels", "cqels2")  # query.dialects.Dialect's values (config imports nothing of the engine)
# A scheme, then no spaces, controls or <>"{}|^`\ : what an IRI in N-Triples may hold.
_ABSOLUTE_IRI = re.compile(r'[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>"{}|^`\\]*\Z')
DEFAULT_THREADS = 64
DEFAULT_REPLAY_BUFFER = 1000
DEFAULT_SUBSCRIBER_QUEUE = 256
DEFAULT_KEEPALIVE_S = 15.0
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_LOG_LEVEL = "INFO"
# "*", or a scheme, a host and an optional port: what a browser sends in its Origin header.
_ORIGIN = re.compile(r"\*\Z|[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#]+\Z")
LIMIT_ACTIONS = ("fail", "shed")
DEMO_STREAM_CHOICES = ("on", "off")


@dataclass(frozen=True)
class ServerConfig:
    """What ``create_app`` and ``cqels serve`` need to know; validated on construction."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    data_dir: Path = DEFAULT_DATA_DIR
    memory: bool = False  # True: an in-memory store, data_dir unused
    auth_token: str | None = None  # when set, every write needs "Authorization: Bearer <token>"
    query_timeout: float = DEFAULT_QUERY_TIMEOUT  # seconds per one-shot query; 0: none
    max_body_mb: float = DEFAULT_MAX_BODY_MB  # request bodies larger than this get 413
    allow_remote: bool = False  # allow LOAD <http…> and SERVICE <http…>
    demo: bool = False  # load examples/data into an empty store at start
    demo_stream: str = "on"  # with demo: "on" feeds a demo query a looping stream (http.demo.DemoStream)
    cache_engine: str = DEFAULT_CACHE_ENGINE  # what computes the static caches: "spark" or "local"
    spark_master: str | None = None  # None: CQELS_SPARK_MASTER, else local[*]
    spark_parquet_rows: int = DEFAULT_SPARK_PARQUET_ROWS  # larger Spark builds go through Parquet; 0: never
    rebuild_debounce_ms: int = DEFAULT_REBUILD_DEBOUNCE_MS  # quiet time after a change before a rebuild
    stream_base: str = DEFAULT_STREAM_BASE  # the IRI a short stream name is appended to
    dialect: str = "auto"  # what a query registered without one means (query.dialects)
    lateness_ms: int = 0  # how late (behind its stream's latest event) an event may arrive
    max_future_ms: int = 0  # how far ahead of the wall clock an event may be; 0: no bound
    threads: int = DEFAULT_THREADS  # worker threads of the requests that evaluate or write
    replay_buffer: int = DEFAULT_REPLAY_BUFFER  # emissions kept per query for Last-Event-ID
    subscriber_queue: int = DEFAULT_SUBSCRIBER_QUEUE  # emissions a subscriber may lag before it is dropped
    keepalive_s: float = DEFAULT_KEEPALIVE_S  # idle seconds before a results stream gets a keep-alive
    log_level: str = DEFAULT_LOG_LEVEL  # one of LOG_LEVELS (any case)
    read_only: bool = False  # True: every write is refused with 403
    cors_origins: tuple[str, ...] = ()  # origins allowed across origins ("*": any); empty: CORS off
    max_window_triples: int = 0  # triples one window state may hold; 0: no bound
    max_tick_rows: int = 0  # rows one query's operators may produce in one evaluation; 0: no bound
    limit_action: str = "fail"  # past a limit: "fail" the query, or "shed" a full window's new triples
    sources: tuple[str, ...] = ()  # "NAME=URL" of --source: started at start-up (connectors.specs)
    sinks: tuple[str, ...] = ()  # "NAME=URL" of --sink

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            msg = f"port {self.port} is out of range; use 0..65535 (0 picks a free port)"
            raise ValueError(msg)
        if not self.query_timeout >= 0:
            msg = f"query timeout must be a number of seconds (0 for none), not {self.query_timeout}"
            raise ValueError(msg)
        if not self.max_body_mb > 0:
            msg = f"body limit must be a positive number of MiB, not {self.max_body_mb}"
            raise ValueError(msg)
        if self.auth_token is not None and not self.auth_token.strip():
            msg = "the auth token is empty; give a non-empty token or none at all"
            raise ValueError(msg)
        if self.cache_engine not in CACHE_ENGINES:
            msg = f"unknown cache engine {self.cache_engine!r}; use {' or '.join(CACHE_ENGINES)}"
            raise ValueError(msg)
        if self.spark_master is not None and not self.spark_master.strip():
            msg = "the Spark master URL is empty; give one (spark://host:7077, local[4], ...) or none for local[*]"
            raise ValueError(msg)
        if self.rebuild_debounce_ms < 0:
            msg = f"the rebuild debounce must be a non-negative number of milliseconds, not {self.rebuild_debounce_ms}"
            raise ValueError(msg)
        for field_name, minimum in (
            ("threads", 1), ("replay_buffer", 0), ("subscriber_queue", 1), ("lateness_ms", 0),
            ("max_future_ms", 0),
            ("max_window_triples", 0), ("max_tick_rows", 0), ("spark_parquet_rows", 0),
        ):
            value = getattr(self, field_name)
            if not isinstance(value, int) or value < minimum:
                msg = f"{field_name} must be an integer of at least {minimum}, not {value!r}"
                raise ValueError(msg)
        if self.demo_stream not in DEMO_STREAM_CHOICES:
            msg = f"--demo-stream {self.demo_stream!r}: use {' or '.join(DEMO_STREAM_CHOICES)}"
            raise ValueError(msg)
        if self.limit_action not in LIMIT_ACTIONS:
            msg = f"unknown limit action {self.limit_action!r}; use {' or '.join(LIMIT_ACTIONS)}"
            raise ValueError(msg)
        if not self.keepalive_s > 0:
            msg = f"the keep-alive interval must be a positive number of seconds, not {self.keepalive_s}"
            raise ValueError(msg)
        if not _ABSOLUTE_IRI.match(self.stream_base):
            msg = f"the stream base {self.stream_base!r} is not an absolute IRI; give one like http://example.org/streams/"
            raise ValueError(msg)
        if self.dialect not in DIALECTS:
            msg = f"unknown dialect {self.dialect!r}; use one of {', '.join(DIALECTS)}"
            raise ValueError(msg)
        object.__setattr__(self, "data_dir", Path(self.data_dir))
        if str(self.log_level).upper() not in LOG_LEVELS:
            msg = f"unknown log level {self.log_level!r}; use one of {', '.join(LOG_LEVELS)}"
            raise ValueError(msg)
        object.__setattr__(self, "log_level", str(self.log_level).upper())
        origins = tuple(o.strip().rstrip("/") for o in self.cors_origins)
        for origin in origins:
            if not _ORIGIN.match(origin):
                msg = f"the CORS origin {origin!r} is not an origin; give one like https://app.example.org (or *)"
                raise ValueError(msg)
        object.__setattr__(self, "cors_origins", origins)

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    @property
    def store_path(self) -> Path | None:
        """Where the store lives: None for an in-memory store."""
        return None if self.memory else self.data_dir
