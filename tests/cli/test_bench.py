"""The benchmark command runs end to end on small inputs and prints its table (no timing asserted)."""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from benchmarks.cli import build_parser
from benchmarks.options import resolve_scale_n
from benchmarks.runner import plan
from helpers.pipeline import PROJECT_ROOT
from lwec_tasks.cli import build_parser as build_lwec_parser


def test_the_benchmark_command_has_the_benchmark_options():
    args = build_parser().parse_args(["--scale-n", "0", "--pools"])
    assert not args.full and args.scale_n == 0 and args.pools == [] and args.repeats is None
    assert callable(args.handler)


def test_the_benchmarks_are_not_an_lwec_command():
    """They are not installed with the package; `python -m benchmarks` runs them from the checkout."""
    with pytest.raises(SystemExit):
        build_lwec_parser().parse_args(["bench"])


def test_bench_defaults_are_cheap_and_big_cases_opt_in():
    default = build_parser().parse_args([])
    full = build_parser().parse_args(["--full"])
    assert resolve_scale_n(default) == 1_000_000
    assert resolve_scale_n(full) == 10_000_000
    default.pools, full.pools = [], []
    assert {c.name for c in plan(full)} - {c.name for c in plan(default)} == {
        "reference-scale", "project-lwea-large", "lwea-at-scale"}


@pytest.mark.parametrize("argv, culprit", [
    (["--scale-n", "-5"], "-5"),
    (["--scale-n", "12"], "12"),
    (["--scale-n", "lots"], "'lots'"),
    (["--pools", "XYZ"], "'XYZ'"),
    (["--repeats", "-1"], "-1"),
])
def test_bench_refuses_bad_values_before_running_anything(argv, culprit):
    completed = subprocess.run([sys.executable, "-m", "benchmarks", *argv],
                               cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert culprit in completed.stderr and "# running" not in completed.stderr


def test_benchmark_runs_every_kind_of_case_in_subprocesses(tmp_path):
    """Every kind of case, each timed once (``--repeats 0``: the cold run alone)."""
    output = tmp_path / "bench.md"
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--pools", "VS", "--scale-n", "20000", "--repeats", "0",
         "--output", str(output)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    report = output.read_text()
    assert report.startswith("Machine: ")
    assert "| synthetic N=20,000 | ECI + LWGP k=10 | lwec |" in report
    assert "| blobs N=20,000 d=16 | base clusterings M=10 |" in report
    rows = [line.split("|") for line in report.splitlines() if line.startswith("| ") and "cold s" not in line]
    assert rows and all(row[7].strip() == "–" for row in rows)  # no warm repeats
    if "| VS |" in report:  # pools present
        assert "cuts identical 29/29" in report


@pytest.mark.slow
def test_bench_pipeline_times_the_flow_and_the_naive_pipeline_on_the_same_table(tmp_path):
    import sqlalchemy as sa

    database = f"sqlite:///{tmp_path / 'bench.db'}"
    output = tmp_path / "pipeline.md"
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "pipeline", "--database-url", database, "--rows", "3000",
         "-k", "5", "--output", str(output)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}, capture_output=True, text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = output.read_text()
    assert "| lwec flow |" in report and "| naive pandas + MiniBatchKMeans |" in report
    assert "lwec / naive: time" in report
    engine = sa.create_engine(database)
    with engine.connect() as connection:
        counts = {name: connection.execute(sa.text(f'SELECT COUNT(*) FROM "{name}"')).scalar_one()
                  for name in ("bench_blobs_3000", "bench_blobs_3000_lwec", "bench_blobs_3000_naive")}
    assert counts == {"bench_blobs_3000": 3000, "bench_blobs_3000_lwec": 3000, "bench_blobs_3000_naive": 3000}
    reported = {line.split("|")[1].strip(): float(line.rsplit("|", 2)[-2]) for line in report.splitlines()
                if line.startswith(("| lwec flow", "| naive"))}
    # The NMIs printed are those of the labels each pipeline wrote, against the table's ground truth.
    from lwec_tasks import nmi

    truth = pd.read_sql('SELECT id, target FROM "bench_blobs_3000"', engine).set_index("id")["target"]
    for name, table in (("lwec flow", "bench_blobs_3000_lwec"), ("naive pandas + MiniBatchKMeans",
                                                                  "bench_blobs_3000_naive")):
        written = pd.read_sql(f'SELECT id, label FROM "{table}"', engine).set_index("id")["label"]
        expected = nmi(truth.loc[written.index].to_numpy(), written.to_numpy(), normalization="max")
        assert reported[name] == pytest.approx(expected, abs=5e-5), name


def test_bench_pipeline_refuses_a_tiny_table_before_running(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["pipeline", "--database-url", "sqlite:///x.db", "--rows", "-5"])
    assert "expected at least 1,000, got -5" in capsys.readouterr().err
