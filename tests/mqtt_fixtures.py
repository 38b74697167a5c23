"""A real ``mosquitto`` for the tests of MQTT connectors (``mqtt_broker``): a pytest plugin
(``pytest_plugins`` in tests/conftest.py), so that tests/connectors and the console's browser tests
(tests/console) share the session's broker. When the broker or its clients are missing,
``.ci/install-mosquitto`` installs them (as root with apt-get); where that cannot be done the tests
skip, saying so (and fail under CI, which installs them)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator

import pytest
from mqtt_broker import USERS, Broker, mosquitto_executable
from paths import ROOT


@pytest.fixture(scope="session")
def mosquitto() -> str:
    if mosquitto_executable() is None:
        subprocess.run([str(ROOT / ".ci" / "install-mosquitto")], check=False)
    executable = mosquitto_executable()
    if executable is None and os.environ.get("CI") == "true":  # CI installs it (.ci/run): a skip would hide the tests
        pytest.fail("mosquitto is not installed and .ci/install-mosquitto could not install it")
    if executable is None:
        pytest.skip("mosquitto is not installed and could not be: run .ci/install-mosquitto as root "
                    "(apt-get install mosquitto mosquitto-clients)")
    return executable


@pytest.fixture(scope="session")
def broker(mosquitto, tmp_path_factory) -> Iterator[Broker]:
    """One broker for the session (tests keep to their own topics and client ids): anonymous,
    password and TLS listeners. A test that stops its broker takes ``new_broker``."""
    started = Broker(tmp_path_factory.mktemp("mosquitto"), users=USERS, tls=True)
    started.start()
    yield started
    started.stop()


@pytest.fixture
def new_broker(mosquitto, tmp_path) -> Iterator[Callable[..., Broker]]:
    """``new_broker(**options)``: a broker of the test's own, stopped after it."""
    made: list[Broker] = []

    def make(**options) -> Broker:
        broker = Broker(tmp_path / f"mosquitto-{len(made)}", **options)
        made.append(broker)
        broker.start()
        return broker

    yield make
    for broker in made:
        broker.stop()
