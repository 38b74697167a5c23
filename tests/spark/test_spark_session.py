"""``spark.session.SparkSessionHolder``: wrapping, waiting, one session per holder, the master URL,
who stops what, and the error when Java is missing. Only the shared ``spark`` fixture's JVM runs:
a holder started here gets that session back from ``getOrCreate`` and must not stop it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading

import pytest

from cqels_endpoint.errors import SparkUnavailableError
from cqels_endpoint.spark import session as session_module
from cqels_endpoint.spark.session import DEFAULT_MASTER, MASTER_ENV, SparkSessionHolder, resolve_master

java = pytest.mark.skipif(shutil.which("java") is None, reason="Java is not installed: Spark needs a JRE")


def test_master_comes_from_the_argument_then_the_environment_then_local(monkeypatch) -> None:
    monkeypatch.setenv(MASTER_ENV, "spark://env:7077")
    assert resolve_master("spark://arg:7077") == "spark://arg:7077"
    assert resolve_master(None) == "spark://env:7077"
    monkeypatch.delenv(MASTER_ENV)
    assert resolve_master(None) == DEFAULT_MASTER == "local[*]"
    assert SparkSessionHolder().master == "local[*]"  # the holder resolves it the same way


@java
def test_wrap_hands_back_the_session_and_stop_leaves_it_running(spark) -> None:
    holder = SparkSessionHolder.wrap(spark)
    assert holder.master == spark.sparkContext.master
    assert holder.get(timeout=0) is spark
    holder.stop()
    assert spark.range(3).count() == 3  # still alive for the other tests


@java
def test_get_times_out_and_start_twice_builds_one_session(spark, monkeypatch) -> None:
    # The build is held back until the test lets it go, so the timeout does not race the build.
    gate = threading.Event()
    calls = []
    real_build = session_module.build_session

    def gated_build(*args, **kwargs):
        calls.append(args)
        gate.wait()
        return real_build(*args, **kwargs)

    monkeypatch.setattr(session_module, "build_session", gated_build)
    holder = SparkSessionHolder("local[2]")
    holder.start()
    holder.start()
    with pytest.raises(SparkUnavailableError, match=r"did not start within 0.05 s"):
        holder.get(timeout=0.05)
    gate.set()
    first = holder.get(timeout=60)
    assert holder.get(timeout=0) is first
    assert len(calls) == 1
    # getOrCreate returned the running test session: the holder did not create it, so stop() must
    # leave it running.
    assert first.sparkContext is spark.sparkContext
    holder.stop()
    assert spark.range(2).count() == 2


@java
def test_a_cache_engine_made_from_a_name_is_closed_with_the_engine_without_stopping_a_shared_session(spark) -> None:
    from cqels_endpoint.engine import Engine

    engine = Engine(cache_engine="spark")
    holder = engine.caches.engine.session_holder
    assert holder.get(timeout=60).sparkContext is spark.sparkContext
    engine.close()
    assert holder._session is None  # released by Engine.close()
    assert spark.range(2).count() == 2


def test_missing_java_is_a_clear_spark_unavailable_error(tmp_path) -> None:
    # In a subprocess: the test process's own Spark session must not be disturbed.
    script = (
        "from cqels_endpoint.spark.session import SparkSessionHolder\n"
        "from cqels_endpoint.errors import SparkUnavailableError\n"
        "try:\n"
        "    SparkSessionHolder('local[1]').get(timeout=60)\n"
        "except SparkUnavailableError as error:\n"
        "    print(error)\n"
        "else:\n"
        "    raise SystemExit('a session started without Java')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PATH")}
    env["PATH"] = str(tmp_path)  # an empty directory: no java on it
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "Java is not installed" in done.stdout
    assert "JRE 17" in done.stdout
