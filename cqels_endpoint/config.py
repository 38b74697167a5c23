"""Server configuration: one frozen dataclass, filled from ``cqels serve`` flags or the environment.

Every field has a command-line flag and a ``CQELS_*`` environment twin (the flag wins):

==================  ======================  ====================  =============================
field               flag                    environment           default
==================  ======================  ====================  =============================
``host``            ``--host``              ``CQELS_HOST``        ``127.0.0.1`` (loopback only)
``port``            ``--port``              ``CQELS_PORT``        ``7878``
``data_dir``        ``--data-dir``          ``CQELS_DATA_DIR``    ``./cqels-data``
``memory``          ``--memory``            ``CQELS_MEMORY``      off (keep the store on disk)
``auth_token``      ``--auth-token``        ``CQELS_AUTH_TOKEN``  none (writes open)
``query_timeout``   ``--query-timeout``     ``CQELS_QUERY_TIMEOUT``  30 seconds
``max_body_mb``     ``--max-body-mb``       ``CQELS_MAX_BODY_MB``  64 MiB
``allow_remote``    ``--allow-remote``      ``CQELS_ALLOW_REMOTE``  off (LOAD/SERVICE refused)
``demo``            ``--demo``              ``CQELS_DEMO``        off
==================  ======================  ====================  =============================

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
        object.__setattr__(self, "data_dir", Path(self.data_dir))

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    @property
    def store_path(self) -> Path | None:
        """Where the store lives: None for an in-memory store."""
        return None if self.memory else self.data_dir
