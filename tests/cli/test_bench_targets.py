"""``python -m benchmarks.targets``: the table logic on stand-in targets, and one real cheap row end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.target_list import TARGETS
from benchmarks.target_table import (
    ERROR,
    FAILS,
    HOLDS,
    SKIPPED,
    Context,
    Measured,
    Need,
    Target,
    at_least,
    at_most,
    exit_status,
    measure_one,
    select,
)
from benchmarks.targets import main
from helpers.pipeline import PROJECT_ROOT

NO_DATABASE = Need("--database-url", lambda context: None if context.database_url else "needs --database-url")


def fixed(**values: float):
    return lambda context: Measured(dict(values))


def failing(context):
    raise RuntimeError("the table is gone")


STAND_INS = [
    Target("fast", "a fast thing", "≤ 1 s", at_most(1.0), fixed(**{"": 0.4}), 0.1, quick=True,
           figure_format="{:.1f} s"),
    Target("slow", "a slow thing", "≤ 1 s", at_most(1.0), fixed(**{"": 2.5}), 5, figure_format="{:.1f} s"),
    Target("both", "two methods", "≥ 0.8 for both", at_least(0.8), fixed(LWEA=0.85, LWGP=0.79), 1, quick=True),
    Target("whole-run", "a whole run", "≤ 2×", at_most(2.0), fixed(**{"": 1.0}), 3, (NO_DATABASE,)),
    Target("broken", "a failing measurement", "≤ 1", at_most(1.0), failing, 1),
]


def test_a_row_holds_when_every_value_meets_the_bound_and_not_otherwise():
    context = Context()
    assert measure_one(STAND_INS[0], context).status == HOLDS
    assert measure_one(STAND_INS[1], context).status == FAILS
    row = measure_one(STAND_INS[2], context)
    assert row.status == FAILS and row.figure == "LWEA 0.85, LWGP 0.79"
    assert not at_least(0.8).holds(float("nan")) and at_most(0.0).holds(0.0)


def test_a_bound_read_from_the_data_replaces_the_targets_own():
    target = Target("anchored", "", "≥ the anchors", at_least(0.9),
                    lambda context: Measured({"": 0.81}, "bar read from the data", bound=0.80), 1)
    row = measure_one(target, Context())
    assert row.status == HOLDS and row.figure == "0.81 (bar read from the data)"


def test_a_missing_need_skips_the_row_with_its_reason_and_a_failure_is_an_error_row():
    skipped = measure_one(STAND_INS[3], Context())
    assert skipped.status == SKIPPED and skipped.holds_text == "skipped: needs --database-url"
    assert measure_one(STAND_INS[3], Context(database_url="sqlite://")).status == HOLDS
    broken = measure_one(STAND_INS[4], Context())
    assert broken.status == ERROR and broken.reason == "the table is gone"


def test_only_rows_measured_and_not_holding_make_the_exit_status_non_zero():
    context = Context()
    rows = {target.id: measure_one(target, context) for target in STAND_INS}
    assert exit_status([rows["fast"], rows["whole-run"]]) == 0  # skipped counts for nothing
    assert exit_status([rows["fast"], rows["slow"]]) == 1
    assert exit_status([rows["fast"], rows["broken"]]) == 1


def test_a_shared_measurement_runs_once_for_every_target_reading_it():
    calls = []
    context = Context()
    for _ in range(3):
        assert context.once("key", lambda: calls.append(1) or 7) == 7
    assert calls == [1]


def test_only_skip_and_quick_select_targets_in_list_order_and_unknown_ids_are_refused():
    ids = [target.id for target in select(STAND_INS, ["broken", "fast"], None)]
    assert ids == ["fast", "broken"]
    assert [t.id for t in select(STAND_INS, None, ["slow", "broken"], quick=True)] == ["fast", "both"]
    with pytest.raises(ValueError, match="'nope'"):
        select(STAND_INS, ["nope"])


def test_the_command_prints_each_row_then_the_table_and_writes_json(capsys, tmp_path):
    output = tmp_path / "rows.json"
    status = main(["--only", "fast,whole-run", "--json", str(output)], targets=STAND_INS)
    printed = capsys.readouterr().out
    assert status == 0
    assert printed.splitlines()[0] == "fast: yes — 0.4 s [0 s]"
    assert "whole-run: skipped: needs --database-url" in printed
    header = [line for line in printed.splitlines() if line.startswith("id ")]
    assert header and header[0].split() == ["id", "target", "figure", "holds", "s"]
    rows = json.loads(output.read_text())
    assert [(row["id"], row["status"]) for row in rows] == [("fast", HOLDS), ("whole-run", SKIPPED)]


def test_markdown_list_and_bad_ids(capsys):
    assert main(["--skip", "broken", "--skip", "both", "--markdown"], targets=STAND_INS) == 1  # "slow" fails
    table = capsys.readouterr().out.split("\n\n")[-1]
    assert table.startswith("| id | target | figure | holds | s |")
    assert "| slow | ≤ 1 s | 2.5 s | NO |" in table
    assert main(["--list", "--quick"], targets=STAND_INS) == 0
    listed = capsys.readouterr().out
    assert "fast" in listed and "both" in listed and "slow" not in listed
    with pytest.raises(SystemExit) as exit_info:
        main(["--only", "fast,nope"], targets=STAND_INS)
    assert exit_info.value.code == 2 and "'nope'" in capsys.readouterr().err


def test_the_project_targets_have_unique_ids_and_the_quick_ones_need_no_database():
    ids = [target.id for target in TARGETS]
    assert len(ids) == len(set(ids))
    assert all("--database-url" not in [need.name for need in t.needs] for t in TARGETS if t.quick)
    for promised in ("battery-held-out", "blobs-1m-nmi", "blobs-1m-auc", "blobs-1m-ece", "lwea-lwgp-10m",
                     "competent-10m-default", "competent-10m-kmeans", "library-100k", "library-100k-memory",
                     "paper-pools", "evidence-share-10m", "served-1m", "dask-2m", "auto-k-held-out",
                     "battery-dev-half"):
        assert promised in ids


def test_a_real_cheap_row_end_to_end(tmp_path):
    output = tmp_path / "rows.json"
    completed = subprocess.run([sys.executable, "-m", "benchmarks.targets", "--only", "base-clusterings-20k",
                                "--json", str(output)], cwd=PROJECT_ROOT, capture_output=True, text=True,
                               timeout=300)
    assert completed.returncode in (0, 1), completed.stderr[-2000:]
    (row,) = json.loads(output.read_text())
    assert row["id"] == "base-clusterings-20k" and row["status"] in (HOLDS, FAILS)
    assert row["figure"].endswith(" s") and float(row["figure"].removesuffix(" s")) > 0
    assert (completed.returncode == 0) == (row["status"] == HOLDS)
