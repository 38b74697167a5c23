"""The one long-lived SparkSession of an endpoint, started lazily in the background.

Starting a JVM takes seconds, so the server calls ``start()`` at start-up and keeps serving; the
first cache build waits for the session with ``get()``. The master is the argument, else
``CQELS_SPARK_MASTER``, else ``local[*]``.

Logging: Spark's JVM logs at WARN (ERROR when the server's own level is ERROR), and what the JVM
writes to its standard output and error (log4j lines, the launcher's banner, Python workers'
tracebacks) is read line by line into the Python logger ``cqels_endpoint.spark.jvm``, at the level
of the log4j line; Py4J's logger ``py4j`` is set to WARNING at least. Everything then goes through
the server's logging (``cqels serve --log-level``), nothing straight to the terminal.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import threading
from typing import IO

from cqels_endpoint.errors import SparkUnavailableError

DEFAULT_MASTER = "local[*]"
MASTER_ENV = "CQELS_SPARK_MASTER"
JVM_LOGGER = "cqels_endpoint.spark.jvm"

jvm_log = logging.getLogger(JVM_LOGGER)

# Spark's default log4j pattern: "%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m".
_LOG4J_LINE = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (.*)")
# The lines that continue a log4j line: its exception (``%ex``), stack frames and causes.
_CONTINUATION = re.compile(r"\s|Caused by:|Suppressed:|[\w.$]+(Exception|Error|Throwable)(:|$)")
_LOG4J_LEVELS = {
    "TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
    "ERROR": logging.ERROR, "FATAL": logging.CRITICAL,
}


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
        """Stop the session this holder built (a wrapped one belongs to its creator); one still
        starting is stopped as soon as it is up, by the thread starting it."""
        with self._lock:
            session, self._session = self._session, None
            self._thread = None
            self._ready.clear()
            self._error = None
        if session is not None and self._owned:
            session.stop()

    def _build(self) -> None:
        session = error = None
        owned = False
        try:
            # getOrCreate hands back a session already running in this process (another holder's,
            # a test's): that one belongs to its creator and must survive this holder's stop().
            owned = not spark_running()
            session = build_session(self.master, self.app_name)
        except BaseException as failure:  # reported by get(): the thread has no caller to raise to
            error = failure
        with self._lock:
            # stop() while the JVM was starting: the session it did not find is stopped here.
            current = self._thread is threading.current_thread()
            if current:
                self._session, self._error, self._owned = session, error, owned
                self._ready.set()
        if not current and session is not None and owned:
            session.stop()


def resolve_master(master: str | None) -> str:
    """The Spark master URL: ``master``, else ``CQELS_SPARK_MASTER``, else ``local[*]``."""
    return master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER


def spark_running() -> bool:
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
    # Py4J logs every connection it closes at INFO.
    logging.getLogger("py4j").setLevel(max(logging.WARNING, logging.getLogger().getEffectiveLevel()))
    options = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # The cache jobs' Python UDFs work a row at a time: no Arrow batches to convert.
        "spark.sql.execution.pythonUDF.arrow.enabled": "false",
        # The JVM's level from its start on (SparkContext.setLogLevel only after the context is up).
        "spark.log.level": "ERROR" if jvm_log.getEffectiveLevel() >= logging.ERROR else "WARN",
    }
    if shuffle_partitions is not None:
        options["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in options.items():
        builder = builder.config(key, value)
    try:
        _launch_jvm(master, app_name, options)
        return builder.getOrCreate()
    except Exception as error:
        msg = f"Spark failed to start on master {master}: {error}"
        raise SparkUnavailableError(msg) from error


def _launch_jvm(master: str, app_name: str, options: dict[str, str]) -> None:
    """Start this process's JVM with its output piped into ``jvm_log`` (a JVM started already, by an
    earlier session of this process, is kept: one process has one)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # pyspark's own test of "a JVM runs"; no public one exists
        return
    conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(options.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stdout": subprocess.PIPE, "stderr": subprocess.PIPE})
    for stream in (gateway.proc.stdout, gateway.proc.stderr):
        threading.Thread(target=_log_lines, args=(stream,), name="spark-jvm-output", daemon=True).start()
    # The context takes the gateway; the builder's getOrCreate then builds its session on it.
    SparkContext(conf=conf, gateway=gateway)


def _log_lines(stream: IO[bytes]) -> None:
    """Log each line the JVM writes: a log4j line at its level, the lines continuing it (an
    exception and its stack trace) at the same level, any other line at INFO."""
    level = logging.INFO
    with stream:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip()
            if not line:
                continue
            found = _LOG4J_LINE.match(line)
            if found:
                level, line = _LOG4J_LEVELS[found.group(1)], found.group(2)
            elif not _CONTINUATION.match(line):
                level = logging.INFO
            jvm_log.log(level, "%s", line)
