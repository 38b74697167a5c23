"""The wheel carries every package, the grammar and the console's files, and works outside the checkout."""

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from paths import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        # Without build isolation: the venv's Cython, setuptools and wheel (the test extras) build
        # it, nothing is downloaded, and a tree whose extensions are up to date compiles none (the
        # editable install leaves them in build/, see setup.py).
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (found,) = out.glob("cqels_endpoint-*.whl")
    return found


def test_every_source_package_is_declared_in_pyproject():
    import tomllib

    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for package in ("cqels_endpoint", "static_store")
        for p in (ROOT / package).rglob("__init__.py")
    } | {"cqels_endpoint.grammar"}
    assert on_disk == declared


def test_wheel_holds_packages_and_grammar(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "cqels_endpoint/__init__.py" in names
    # The static store, a package of its own beside cqels_endpoint, every module of it.
    assert {str(p.relative_to(ROOT)) for p in (ROOT / "static_store").rglob("*.py")} <= names
    grammar_files = {Path(n).name for n in names if n.startswith("cqels_endpoint/grammar/")}
    assert {p.name for p in (ROOT / "grammar").glob("*.lark")} <= grammar_files
    assert any(n.endswith(".lark") for n in grammar_files)
    # The web console's files, the vendored CodeMirror and its licence included.
    console = ROOT / "cqels_endpoint" / "http" / "console_files"
    expected = {str(p.relative_to(ROOT)) for p in console.rglob("*") if p.is_file()}
    assert expected and expected <= names
    # Every Cython module, compiled for this interpreter.
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    compiled = {str(p.relative_to(ROOT).with_suffix("")) + suffix for p in (ROOT / "cqels_endpoint").rglob("*.pyx")}
    assert compiled and compiled <= names


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> tuple[Path, dict]:
    """The wheel installed (not editable) in a folder of its own, and the environment that runs it."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    # The installed copy must win over the editable checkout on sys.path.
    return target, {**os.environ, "PYTHONPATH": str(target)}


def test_installed_wheel_imports_every_module_outside_the_checkout(installed, tmp_path):
    target, env = installed
    script = (
        "import importlib, pkgutil, cqels_endpoint, static_store\n"
        "for package in (cqels_endpoint, static_store):\n"
        "    names = [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + '.')]\n"
        "    for name in names:\n"
        "        if not name.endswith('__main__'):\n"
        "            assert importlib.import_module(name).__file__.startswith(package.__path__[0]), name\n"
        "    print(package.__file__, len(names))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (engine, engine_count), (store, store_count) = (line.split() for line in done.stdout.splitlines())
    assert engine.startswith(str(target)) and store.startswith(str(target))
    assert int(engine_count) > 80
    assert int(store_count) == len(list((ROOT / "static_store").glob("*.py"))) - 1  # every module but __init__


def test_installed_wheel_explains_outside_the_checkout(installed, tmp_path):
    target, env = installed
    query = (ROOT / "examples" / "queries" / "conference-q2-reachable.rq").read_text()
    explained = subprocess.run(
        [str(target / "bin" / "cqels"), "explain", "-"],
        input=query, cwd=tmp_path, env=env, capture_output=True, text=True,
    )
    assert explained.returncode == 0, explained.stderr
    assert "http://deri.org/streams/rfid" in explained.stdout


def test_installed_wheel_pushes_and_replays_to_a_server(installed, tmp_path, endpoint_factory):
    """The client sub-commands of the wheel (push, replay, register) against a real server."""
    target, env = installed
    server = endpoint_factory(cache_engine="local")
    cqels = [str(target / "bin" / "cqels")]
    events = tmp_path / "events.nt"
    events.write_text("<http://example.org/a> <http://example.org/at> <http://example.org/hall> .\n")
    query = tmp_path / "q.rq"
    query.write_text("SELECT * WHERE { STREAM <urn:cqels:stream:rfid> [RANGE 1s] { ?s ?p ?o } }")
    csv = ROOT / "examples" / "data" / "debs2015" / "trips-2013-01-01-head5000.csv"
    runs = [
        ["register", "q", str(query)],
        ["push", "rfid", str(events), "--time", "1000"],
        ["replay", str(csv), "--speed", "0", "--limit", "20"],
    ]
    for arguments in runs:
        done = subprocess.run([*cqels, *arguments, "--url", server.base_url], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (arguments, done.stderr)
    streams = {s["stream"]: s["events"] for s in server.get("/streams").json()["streams"]}
    assert streams == {"urn:cqels:stream:rfid": 1, "http://debs2015.org/streams/trips": 20}
