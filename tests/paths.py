"""Where the tests find the checkout's files, from any folder of ``tests/``."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
