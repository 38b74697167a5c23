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
``query_timeout``        ``--query-timeout``        ``CQELS_QUERY_TIMEOUT``        30 seconds
``max_body_mb``          ``--max-body-mb``          ``CQELS_MAX_BODY_MB``          64 MiB
``allow_remote``         ``--allow-remote``         ``CQELS_ALLOW_REMOTE``         off (LOAD/SERVICE refused)
``demo``                 ``--demo``                 ``CQELS_DEMO``                 off
``cache_engine``         ``--cache-engine``         ``CQELS_CACHE_ENGINE``         ``spark`` (or ``local``)
``spark_master``         ``--spark-master``         ``CQELS_SPARK_MASTER``         none (``local[*]``)
``rebuild_debounce_ms``  ``--rebuild-debounce-ms``  ``CQELS_REBUILD_DEBOUNCE_MS``  200 ms
=======================  =========================  =============================  =============================

``cache_engine`` computes the cached static sub-patterns of registered queries: ``spark`` on one
long-lived SparkSession (``spark_master``; started in the background when the server starts),
``local`` with pyoxigraph in the server process, for small deployments. A burst of store changes
rebuilds the caches it touches once, ``rebuild_debounce_ms`` after the last change.

>>> ServerConfig().max_body_bytes
67108864
>>> ServerConfig(port=0).port
0
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class ServerConfig:
    """What ``create_app`` and ``cqels serve`` need to know; validated on construction."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    data_dir: Path = DEFAULT_DATA_DIR
    memory: bool = False  # True: an in-memory store, data_dir unused
    auth_token: str | None = None  # when set, every write needs "Authorization: Bearer <token>"
    query_timeout: float = DEFAULT_QUERY_TIMEOUT  # seconds per one-shot query
    max_body_mb: float = DEFAULT_MAX_BODY_MB  # request bodies larger than this get 413
    allow_remote: bool = False  # allow LOAD <http…> and SERVICE <http…>
    demo: bool = False  # load examples/data into an empty store at start
    cache_engine: str = DEFAULT_CACHE_ENGINE  # what computes the static caches: "spark" or "local"
    spark_master: str | None = None  # None: CQELS_SPARK_MASTER, else local[*]
    rebuild_debounce_ms: int = DEFAULT_REBUILD_DEBOUNCE_MS  # quiet time after a change before a rebuild

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            msg = f"port {self.port} is out of range; use 0..65535 (0 picks a free port)"
            raise ValueError(msg)
        if not self.query_timeout > 0:
            msg = f"query timeout must be a positive number of seconds, not {self.query_timeout}"
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
        object.__setattr__(self, "data_dir", Path(self.data_dir))

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    @property
    def store_path(self) -> Path | None:
        """Where the store lives: None for an in-memory store."""
        return None if self.memory else self.data_dir
