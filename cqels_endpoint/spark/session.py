"""The one long-lived SparkSession of an endpoint, started lazily in the background.

Starting a JVM takes seconds, so the server calls ``start()`` at start-up and keeps serving; the
first cache build waits for the session with ``get()``. The master is the argument, else
``CQELS_SPARK_MASTER``, else ``local[*]``.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading

from cqels_endpoint.errors import SparkUnavailableError

DEFAULT_MASTER = "local[*]"
MASTER_ENV = "CQELS_SPARK_MASTER"


class SparkSessionHolder:
    """Builds the SparkSession once, in a background thread; ``get()`` waits for it."""

    def __init__(self, master: str | None = None, app_name: str = "cqels-cache-rebuild"):
        self.master = resolve_master(master)
        self.app_name = app_name
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._session = None
        self._error: BaseException | None = None
        self._owned = False  # whether this holder created its session, and so may stop it

    @classmethod
    def wrap(cls, session) -> SparkSessionHolder:
        """A holder of an existing session (tests share one); ``stop()`` leaves it running."""
        holder = cls(master=session.sparkContext.master)
        holder._session = session
        holder._ready.set()
        return holder

    def start(self) -> None:
        """Begin building the session in a background thread (idempotent)."""
        with self._lock:
            if self._thread is not None or self._ready.is_set():
                return
            self._thread = threading.Thread(target=self._build, name="spark-session", daemon=True)
            self._thread.start()

    def get(self, timeout: float | None = None):
        """The session, starting it if needed; raises ``SparkUnavailableError`` if it cannot start."""
        self.start()
        if not self._ready.wait(timeout):
            msg = f"the Spark session (master {self.master}) did not start within {timeout} s"
            raise SparkUnavailableError(msg)
        if self._error is not None:
            msg = f"the Spark session (master {self.master}) could not start: {self._error}"
            raise SparkUnavailableError(msg) from self._error
        return self._session

    def stop(self) -> None:
        """Stop the session this holder built (a wrapped one belongs to its creator)."""
        with self._lock:
            session, self._session = self._session, None
            self._thread = None
            self._ready.clear()
            self._error = None
        if session is not None and self._owned:
            session.stop()

    def _build(self) -> None:
        try:
            # getOrCreate hands back a session already running in this process (another holder's,
            # a test's): that one belongs to its creator and must survive this holder's stop().
            self._owned = not _spark_running()
            self._session = build_session(self.master, self.app_name)
        except BaseException as error:  # reported by get(): the thread has no caller to raise to
            self._error = error
        finally:
            self._ready.set()


def resolve_master(master: str | None) -> str:
    """The Spark master URL: ``master``, else ``CQELS_SPARK_MASTER``, else ``local[*]``."""
    return master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER


def _spark_running() -> bool:
    try:
        from pyspark import SparkContext
    except ImportError:
        return False
    # pyspark has no public "is a context running" test; getOrCreate itself reads this attribute.
    return SparkContext._active_spark_context is not None


def build_session(master: str, app_name: str = "cqels-cache-rebuild", shuffle_partitions: int | None = None):
    """A SparkSession on ``master`` whose Python workers run this interpreter (so they import the
    same packages, pyoxigraph and cqels_endpoint for the UDFs)."""
    if shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        msg = "Java is not installed (no java on PATH and JAVA_HOME unset); Spark needs a JRE 17 or later"
        raise SparkUnavailableError(msg)
    try:
        from pyspark.sql import SparkSession
    except ImportError as error:
        msg = f"pyspark is not installed ({error}); install it or use --cache-engine local"
        raise SparkUnavailableError(msg) from None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # Arrow-optimised UDFs need pandas, which the endpoint does not depend on.
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
    )
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    try:
        return builder.getOrCreate()
    except Exception as error:
        msg = f"Spark failed to start on master {master}: {error}"
        raise SparkUnavailableError(msg) from error
