"""``python -m benchmarks competent``: its options, table marker, process measurement, NMI read-back and report.

The script runs for real on SQLite (and on PostgreSQL when $LWEC_TEST_POSTGRES_URL is set); the whole
benchmark with one ``lwec run`` is the slow test at the end. No timing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from benchmarks import competent
from benchmarks.cli import build_parser
from benchmarks.competent_script import main as script_main
from helpers.pipeline import PROJECT_ROOT, postgres_url_or_skip, unique


def test_the_subcommand_is_registered_with_its_options():
    args = build_parser().parse_args(["competent", "--database-url", "sqlite:///x.db", "--rows",
                                      "1M,10_000_000,20k", "--settings", "server-up", "--repeats", "2"])
    assert args.bench_kind == "competent" and callable(args.handler)
    assert args.rows == [1_000_000, 10_000_000, 20_000]
    assert args.settings == ["server-up"] and args.repeats == 2 and args.warm_up
    default = build_parser().parse_args(["competent", "--database-url", "sqlite:///x.db"])
    assert default.rows == [1_000_000] and default.settings == ["temporary", "server-up"]


@pytest.mark.parametrize("parse, text", [
    (competent.row_counts, "500"), (competent.row_counts, "lots"), (competent.row_counts, ","),
    (competent.settings_list, "temporary,nightly"), (competent.positive, "0"),
])
def test_bad_option_values_are_refused(parse, text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse(text)


def test_the_table_is_built_once_and_rebuilt_when_its_marker_differs(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'blobs.db'}"
    builds = []
    original = competent.create_blobs_table
    monkeypatch.setattr(competent, "create_blobs_table",
                        lambda engine, name, rows: builds.append(name) or original(engine, name, rows))
    assert competent.ensure_table(url, 1_000) == "blobs_1000"
    assert competent.ensure_table(url, 1_000) == "blobs_1000" and builds == ["blobs_1000"]
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql(f"UPDATE {competent.MARKER_TABLE} SET spec = 'something else'")
    competent.ensure_table(url, 1_000)
    assert builds == ["blobs_1000", "blobs_1000"]
    with engine.connect() as connection:
        columns = [c["name"] for c in sa.inspect(connection).get_columns("blobs_1000")]
        assert connection.exec_driver_sql("SELECT COUNT(*) FROM blobs_1000").scalar_one() == 1_000
    engine.dispose()
    assert columns == ["id", *competent.FEATURES, "target"]


def test_nmi_is_read_against_the_truth_by_id():
    ids = np.arange(6)
    truth = (ids, np.array([0, 0, 1, 1, 2, 2]))
    assert competent.nmi_against(truth, (ids, np.array([5, 5, 3, 3, 9, 9]))) == 1.0
    assert competent.nmi_against(truth, (ids, np.zeros(6, int))) == 0.0
    with pytest.raises(ValueError, match="5 ids"):
        competent.nmi_against(truth, (ids[:5], np.zeros(5, int)))


def test_the_process_tree_peak_counts_children_and_the_main_peak_is_its_own(tmp_path):
    grandchild = "import numpy, time; a = numpy.ones(40 * 2**20 // 8); time.sleep(1.0)"
    child = ("import numpy, subprocess, sys, time; a = numpy.ones(60 * 2**20 // 8); "
             f"subprocess.run([sys.executable, '-c', {grandchild!r}]); print('RESULT {{}}')")
    measured = competent.measure_process([sys.executable, "-c", child], {}, tmp_path, tmp_path / "child.log")
    assert measured["returncode"] == 0 and "RESULT" in (tmp_path / "child.log").read_text()
    assert 60 <= measured["main_peak_mib"] < 200  # not the RSS of the process that forked it
    assert measured["tree_peak_mib"] >= measured["main_peak_mib"] + 40  # both processes' RSS at once
    assert measured["seconds"] >= 1.0


def test_flow_phases_come_from_prefects_console_timestamps():
    start = datetime(2026, 1, 1, 23, 59, 58)  # the flow crosses midnight
    log = ("00:00:03.500 | INFO    | Flow run 'tricky-bird' - Beginning flow run 'tricky-bird' for flow 'x'\n"
           "00:00:04.000 | INFO    | Task run 'load-1' - Finished in state Completed()\n"
           "00:00:13.500 | INFO    | Flow run 'tricky-bird' - Finished in state Completed()\n")
    phases = competent.flow_phases(log, start.timestamp(), seconds=17.0)
    assert phases == {"before_flow_seconds": 5.5, "flow_seconds": 10.0, "after_flow_seconds": 1.5}
    assert competent.flow_phases("no Prefect here", start.timestamp(), 3.0) == {}
    assert timedelta(seconds=phases["before_flow_seconds"])  # plain floats, JSON-ready


def test_the_machines_busy_cpu_seconds_cover_the_processes_own(tmp_path):
    """A process spinning on one core for 0.8 CPU-seconds: the machine was busy for at least that long."""
    spin = ("import time; end = time.process_time() + 0.8\nwhile time.process_time() < end: pass\n"
            "print('RESULT', time.process_time())")
    measured = competent.measure_process([sys.executable, "-c", spin], {}, tmp_path, tmp_path / "spin.log")
    own = float((tmp_path / "spin.log").read_text().split("RESULT")[1])
    assert measured["returncode"] == 0 and measured["cpu_seconds"] >= 0.95 * own
    cores = os.cpu_count()
    assert competent.cpu_floor(measured["cpu_seconds"]) == pytest.approx(measured["cpu_seconds"] / cores)
    assert competent.cpu_floor(None) is None


def _script(seconds, peak, nmi, cpu=None, **stages):
    return {"seconds": seconds, "cpu_seconds": cpu, "tree_peak_mib": peak, "main_peak_mib": peak, "nmi": nmi,
            "stages": stages}


def test_medians_ratios_and_the_report():
    script = [_script(10.0, 300.0, 0.80, 14.0, read=1.0, fit=5.0), _script(12.0, 320.0, 0.80, 16.0, read=1.0, fit=7.0),
              _script(11.0, 310.0, 0.80, 15.0, read=2.0, fit=6.0)]
    lwec = [{**_script(30.0, 900.0, 0.86, 45.0, load=2.0, generate=4.0), "mlflow_seconds": 4.0,
             "before_flow_seconds": 15.0, "flow_seconds": 13.0, "after_flow_seconds": 2.0},
            {"seconds": 1.0, "returncode": 1, "error": "boom"}]
    summary = competent.summarise(1_000, {competent.SCRIPT: script, "lwec temporary": lwec,
                                          "lwec server-up": [{"error": "no server", "seconds": 0.5}]})
    medians = summary["medians"]
    assert medians["script"]["seconds"] == 11.0 and medians["script"]["stages"] == {"read": 1.0, "fit": 6.0}
    assert medians["script"]["rest"] == pytest.approx(4.0)
    assert medians["lwec temporary"]["repeats"] == 1  # the failed repeat is left out
    assert medians["lwec temporary"]["rest_of_flow"] == pytest.approx(3.0)  # 13 − (2 + 4) − 4
    ratio = summary["ratios"]["lwec temporary"]
    assert ratio["seconds"] == pytest.approx(30 / 11) and ratio["tree_peak"] == pytest.approx(900 / 310)
    assert ratio["nmi"] == pytest.approx(0.86 / 0.80) and ratio["cpu"] == pytest.approx(45 / 15)
    assert summary["ratios"]["lwec server-up"] is None
    text = competent.report([summary], repeats=3)
    assert "median of 3" in text
    floor = 45.0 / os.cpu_count()
    assert (f"| 1,000 | lwec temporary | 30.0 | 45.0 | {floor:.1f} | 900 | 900 | – | 0.8600 | 2.73 | 3.00 | 2.90 | "
            "2.90 | 1.075 |") in text
    assert "| 1,000 | lwec server-up | error: no server |" in text
    assert "| 1,000 | temporary | 15.00 | 2.00 | 4.00 | – | – | – | – | – | – | 4.00 | 3.00 | 2.00 | 30.0 |" in text
    json.dumps(summary)


def _run_script_on(url: str, tmp_path: Path) -> None:
    table = competent.ensure_table(url, 3_000)
    output = unique("competent_labels")
    assert script_main([url, table, output]) == 0
    ids, labels = competent.read_column(url, output, "label")
    assert competent.nmi_against(competent.read_column(url, table, "target"), (ids, labels)) > 0.7
    engine = sa.create_engine(url)
    try:
        assert sa.inspect(engine).get_pk_constraint(output)["constrained_columns"] == ["id"]
    finally:
        competent.drop_labels(url, output)
        engine.dispose()


def test_the_competent_script_on_sqlite(tmp_path, capsys):
    _run_script_on(f"sqlite:///{tmp_path / 'blobs.db'}", tmp_path)
    result = json.loads(capsys.readouterr().out.split("RESULT ", 1)[1])
    assert result["rows"] == 3_000 and set(result["seconds"]) == set(competent.SCRIPT_STAGES)


@pytest.mark.postgres
def test_the_competent_script_on_postgresql(tmp_path):
    _run_script_on(postgres_url_or_skip(), tmp_path)


@pytest.mark.postgres
def test_a_table_built_on_postgresql_is_vacuumed_and_analysed_before_any_run(monkeypatch):
    url = postgres_url_or_skip()
    marker = unique("spec")  # no earlier run left this marker: the table is built again, whatever the database holds
    monkeypatch.setattr(competent, "table_spec", lambda rows: f"{marker}: {rows} rows")
    name = competent.ensure_table(url, 2_000)
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            vacuumed, analysed = connection.execute(sa.text(
                "SELECT last_vacuum, last_analyze FROM pg_stat_user_tables WHERE relname = :name"),
                {"name": name}).one()
            assert vacuumed is not None and analysed is not None
            # every page all-visible: a reader sets no hint bits
            assert connection.execute(sa.text("SELECT relallvisible = relpages FROM pg_class WHERE relname = :name"),
                                      {"name": name}).scalar_one()
    finally:
        with engine.begin() as connection:
            sa.Table(name, sa.MetaData()).drop(connection, checkfirst=True)
            markers = sa.table(competent.MARKER_TABLE, sa.column("table_name"))
            connection.execute(sa.delete(markers).where(markers.c.table_name == name))
        engine.dispose()


@pytest.mark.slow
def test_the_whole_benchmark_with_one_lwec_run(tmp_path):
    """The script and one first CLI run of lwec (temporary server) on 2,000 rows of SQLite: ~1 min."""
    report = tmp_path / "competent.json"
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "competent", "--database-url",
         f"sqlite:///{tmp_path / 'blobs.db'}", "--rows", "2000", "--settings", "temporary", "--no-warm-up",
         "--json", str(report), "--workdir", str(tmp_path / "work")],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:] + completed.stdout[-3000:]
    assert "| 2,000 | lwec temporary |" in completed.stdout
    size = json.loads(report.read_text())["sizes"][0]
    lwec = size["medians"]["lwec temporary"]
    assert set(lwec["stages"]) >= {"load", "generate", "consensus", "write"}
    assert lwec["nmi"] > 0.7 and size["medians"]["script"]["nmi"] > 0.7
    assert lwec["tree_peak_mib"] >= lwec["main_peak_mib"] > 100
    assert size["ratios"]["lwec temporary"]["seconds"] > 0


def test_mixes_are_timed_as_their_own_lwec_runs():
    args = build_parser().parse_args(["competent", "--database-url", "sqlite:///x.db",
                                      "--generators", "kmeans", "--generators", "genie:1,kmeans:1"])
    assert args.generators == ["kmeans", "kmeans:1,genie:1"]
    command = competent.lwec_command("sqlite:///x.db", "t", "out", "sqlite:///m.db", "key", "kmeans:1,genie:1")
    assert command[command.index("--generators") + 1] == "kmeans:1,genie:1"
    command = competent.lwec_command("sqlite:///x.db", "t", "out", "sqlite:///m.db", "key")
    assert command[command.index("--generators") + 1] == "kmeans"  # explicitly: lwec run's default differs
    # the guard's "default" runs leave the mix to the run, which takes its default by the table's size
    command = competent.lwec_command("sqlite:///x.db", "t", "out", "sqlite:///m.db", "key", None)
    assert "--generators" not in command and command[command.index("--table") + 1] == "t"
    assert competent.run_label("server-up", "kmeans:1,genie:1") == "lwec server-up [kmeans:1,genie:1]"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["competent", "--database-url", "sqlite:///x.db", "--generators", "nope"])
