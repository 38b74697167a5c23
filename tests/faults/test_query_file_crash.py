"""A registration killed while ``queries.json`` is saved leaves the old file or the new one, and the
backup of the one before (``QueryRegistry._save``: temporary file, fsync, hard link, rename, fsync)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cqels_endpoint.engine.registry import FILE_NAME
from tests.faults.crashing import NO_KILL, save_queries_killed_after


def names(path: Path) -> list[str]:
    return [q["name"] for q in json.loads(path.read_text("utf-8"))["queries"]]


def test_a_save_killed_at_any_step_leaves_the_old_or_the_new_file(tmp_path: Path) -> None:
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    assert save_queries_killed_after(prepared / FILE_NAME, ["a"], NO_KILL) is not None
    assert save_queries_killed_after(prepared / FILE_NAME, ["a", "b"], NO_KILL) is not None
    counting = tmp_path / "counting"
    shutil.copytree(prepared, counting)
    calls = save_queries_killed_after(counting / FILE_NAME, ["a", "b", "c"], NO_KILL)
    assert calls == 5  # fsync of the file, link, rename of the backup, rename of the file, fsync of the directory
    seen = set()
    for kill_after in range(1, calls + 1):
        crashed = tmp_path / f"crashed-{kill_after}"
        shutil.copytree(prepared, crashed)
        assert save_queries_killed_after(crashed / FILE_NAME, ["a", "b", "c"], kill_after) is None
        found = names(crashed / FILE_NAME)
        assert found in (["a", "b"], ["a", "b", "c"]), f"killed after call {kill_after}: {found}"
        assert names(crashed / (FILE_NAME + ".bak")) in (["a"], ["a", "b"])
        seen.add(tuple(found))
    assert seen == {("a", "b"), ("a", "b", "c")}
