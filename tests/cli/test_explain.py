"""``cqels explain``: the console script (in a subprocess) on a file and on standard input; exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from cqels_endpoint.cli import main

EXAMPLES = ROOT / "examples" / "queries"
Q4 = EXAMPLES / "conference-q4-editors.rq"


CQELS = Path(sys.executable).with_name("cqels")  # the console script installed beside the interpreter


def run(*args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """The ``cqels`` console script with a clean CQELS_* environment."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CQELS_")}
    return subprocess.run(
        [str(CQELS), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        timeout=60,
    )


def test_explain_prints_algebra_optimised_algebra_and_split():
    result = run("explain", str(Q4))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    sections = [line for line in out.splitlines() if line.startswith("# ")]
    assert sections == [
        "# algebra",
        "# optimised (push_filters, flatten_joins, split_static)",
        "# static/stream split",
        "# dialect",
        "# physical plan",
        "# spark job (cqels spark-job)",
    ]
    assert out.split("# dialect\n", 1)[1].startswith("cqels (the default;")
    split = out.split("# static/stream split\n", 1)[1].split("\n# dialect\n", 1)[0]
    assert split.splitlines()[:6] == [
        "stream patterns (2):",
        "  S1  <http://deri.org/streams/rfid> [TRIPLES 1]  (line 9)",
        "        ?auth lv:detectedAt ?loc1",
        "  S2  <http://deri.org/streams/rfid> [RANGE 15s]  (line 10)",
        "        ?editor lv:detectedAt ?loc2",
        "static caches (2):",
    ]
    assert "  C1  joined on ?loc1 ?loc2  (line 11)" in split
    assert "  C2  joined on ?auth ?editor  (line 12)" in split
    assert "(static (?loc1 ?loc2)" in out
    physical = out.split("# physical plan\n", 1)[1].split("\n# spark job", 1)[0]
    assert physical.startswith("select (incremental)\n")
    assert "multiway join of 4 inputs" in physical
    assert out.endswith("# spark job (cqels spark-job)\none partition: the window of <http://deri.org/streams/rfid> is not an eager time window "
                        "(its contents or closes depend on the events of every key)\n")


def test_explain_reads_standard_input_and_honours_the_env_twin_of_a_flag():
    text = Q4.read_text(encoding="utf-8")
    from_stdin = run("explain", "-", stdin=text)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == run("explain", str(Q4)).stdout
    full = run("explain", "-", stdin=text, env={"CQELS_FULL_IRIS": "1"})
    assert "<http://deri.org/floorplan/detectedAt>" in full.stdout and "lv:detectedAt" not in full.stdout
    flag_wins = run("explain", "--no-full-iris", "-", stdin=text, env={"CQELS_FULL_IRIS": "1"})
    assert "lv:detectedAt" in flag_wins.stdout


def test_explain_runs_only_the_passes_asked_for():
    result = run("explain", "--passes", "flatten_joins", str(Q4))
    assert result.returncode == 0, result.stderr
    assert "# optimised (flatten_joins)" in result.stdout
    assert "no stream patterns" not in result.stdout and "static caches: none" in result.stdout
    env_twin = run("explain", str(Q4), env={"CQELS_PASSES": "nonsense"})
    assert env_twin.returncode == 2 and "unknown pass 'nonsense'" in env_twin.stderr


def test_explain_of_a_one_shot_query_says_there_is_nothing_to_split():
    result = run("explain", "-", stdin="SELECT * { ?s ?p ?o }")
    assert result.returncode == 0
    assert result.stdout.rstrip().endswith("no stream patterns: a one-shot query, evaluated on the static store as a whole")


def test_a_query_error_prints_the_caret_message_and_exits_2():
    result = run("explain", "-", stdin="SELECT * WHERE {\n  ?s ?p \n}")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith("cqels explain: ") and "(line 3, column 1)" in lines[0]
    assert lines[-1].strip() == "^"


def test_a_plan_error_of_the_translation_exits_2_too():
    text = "SELECT * FROM NAMED WINDOW <http://e/w> ON <http://e/s> [RANGE PT1M]\nWHERE { WINDOW <http://e/v> { ?s ?p ?o } }"
    result = run("explain", "-", stdin=text)
    assert result.returncode == 2
    assert "window <http://e/v> is not declared" in result.stderr
    assert "(line 2, column 16)" in result.stderr


def test_an_unreadable_file_exits_2(tmp_path):
    result = run("explain", str(tmp_path / "missing.rq"))
    assert result.returncode == 2
    assert "cannot read" in result.stderr and "missing.rq" in result.stderr


def test_main_in_process_returns_the_exit_code(capsys):
    assert main(["explain", str(Q4)]) == 0
    assert "# static/stream split" in capsys.readouterr().out
    with pytest.raises(SystemExit) as caught:
        main(["explain"])
    assert caught.value.code == 2
