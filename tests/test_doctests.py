"""The examples in the packages' docstrings run as written, in every module that has one."""

from __future__ import annotations

import doctest
import importlib

import pytest
from paths import ROOT

PACKAGES = ("cqels_endpoint", "static_store")
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for package in PACKAGES
    for path in (ROOT / package).rglob("*.py")
    if ">>> " in path.read_text(encoding="utf-8") and path.name != "__main__.py"
)


def test_the_sweep_finds_the_documented_modules() -> None:
    assert {"cqels_endpoint.engine.core", "cqels_endpoint.testing", "cqels_endpoint.runtime.windows", "static_store"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_documented_examples(name: str) -> None:
    results = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0
    assert results.failed == 0
