"""The benchmark command runs end to end on small inputs and prints its table (no timing asserted)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks.options import resolve_scale_n
from benchmarks.runner import plan
from helpers.pipeline import PROJECT_ROOT
from lwec_tasks.cli import build_parser


def test_lwec_bench_is_registered_with_the_benchmark_options():
    args = build_parser().parse_args(["bench", "--scale-n", "0", "--pools"])
    assert not args.full and args.scale_n == 0 and args.pools == []
    assert callable(args.handler)


def test_bench_defaults_are_cheap_and_big_cases_opt_in():
    default = build_parser().parse_args(["bench"])
    full = build_parser().parse_args(["bench", "--full"])
    assert resolve_scale_n(default) == 1_000_000
    assert resolve_scale_n(full) == 10_000_000
    default.pools, full.pools = [], []
    assert {c.name for c in plan(full)} - {c.name for c in plan(default)} == {
        "reference-scale", "project-lwea-large"}


@pytest.mark.parametrize("argv, culprit", [
    (["--scale-n", "-5"], "-5"),
    (["--scale-n", "12"], "12"),
    (["--scale-n", "lots"], "'lots'"),
    (["--pools", "XYZ"], "'XYZ'"),
])
def test_bench_refuses_bad_values_before_running_anything(argv, culprit):
    completed = subprocess.run([sys.executable, "-m", "lwec_tasks", "bench", *argv],
                               cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert culprit in completed.stderr and "# running" not in completed.stderr


def test_benchmark_runs_every_kind_of_case_in_subprocesses(tmp_path):
    output = tmp_path / "bench.md"
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--pools", "VS", "--scale-n", "20000",
         "--output", str(output)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    report = output.read_text()
    assert report.startswith("Machine: ")
    assert "| synthetic N=20,000 | ECI + LWGP k=10 | lwec |" in report
    assert "needs" in report and "'lwgp'" in report  # the memory guard's message
    assert "| blobs N=20,000 d=16 | base clusterings M=10 |" in report
    if "| VS |" in report:  # pools present
        assert "cuts identical 29/29" in report
