"""The wheel carries every package and the grammar, and works outside the checkout."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
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
        for p in (ROOT / "cqels_endpoint").rglob("__init__.py")
    } | {"cqels_endpoint.grammar"}
    assert on_disk == declared


def test_wheel_holds_packages_and_grammar(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "cqels_endpoint/__init__.py" in names
    assert "cqels_endpoint/static_store/__init__.py" in names
    grammar_files = {Path(n).name for n in names if n.startswith("cqels_endpoint/grammar/")}
    assert {p.name for p in (ROOT / "grammar").glob("*.lark")} <= grammar_files
    assert any(n.endswith(".lark") for n in grammar_files)


def test_installed_wheel_explains_outside_the_checkout(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    # The installed copy must win over the editable checkout on sys.path.
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run(
        [sys.executable, "-c", "import cqels_endpoint; print(cqels_endpoint.__file__)"],
        cwd=tmp_path, env=env, check=True, capture_output=True, text=True,
    ).stdout
    assert where.startswith(str(target))
    query = (ROOT / "examples" / "queries" / "conference-q2-reachable.rq").read_text()
    explained = subprocess.run(
        [str(target / "bin" / "cqels"), "explain", "-"],
        input=query, cwd=tmp_path, env=env, capture_output=True, text=True,
    )
    assert explained.returncode == 0, explained.stderr
    assert "http://deri.org/streams/rfid" in explained.stdout
