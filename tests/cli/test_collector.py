"""The cyclic garbage collector held off while a command starts up, and on again, over a frozen heap, for its
flow (lwec_tasks.collector)."""

import gc
import json
import subprocess
import sys

import pytest

from helpers.blobs import write_blobs_table
from lwec_tasks.cli import main as lwec_main
from lwec_tasks.cli import run as run_cli
from lwec_tasks.collector import HeldCollections, collections_held_off


@pytest.fixture(autouse=True)
def unfrozen():
    """Each test starts from an unfrozen heap: importing the flow's module in this process froze it
    (imports_without_collections)."""
    gc.unfreeze()


def collector_state() -> tuple[bool, bool]:
    """(collecting, some objects frozen)"""
    return gc.isenabled(), gc.get_freeze_count() > 0


def test_collections_are_held_off_until_collect_from_here_which_freezes_the_start_up():
    assert collector_state() == (True, False)
    with collections_held_off() as held:
        assert collector_state() == (False, False)
        held.collect_from_here()
        assert collector_state() == (True, True)
        held.collect_from_here()  # once only
        assert collector_state() == (True, True)
    assert collector_state() == (True, False)


def test_leaving_early_leaves_the_collector_as_it_was():
    holds: list[HeldCollections] = []
    with pytest.raises(RuntimeError), collections_held_off() as held:
        holds.append(held)
        raise RuntimeError("a check failed")
    assert collector_state() == (True, False)
    holds[0].collect_from_here()  # outside the block: nothing to resume
    assert collector_state() == (True, False)


def test_a_collector_the_caller_turned_off_stays_off():
    gc.disable()
    try:
        with collections_held_off() as held:
            held.collect_from_here()
            assert collector_state() == (False, False)
        assert collector_state() == (False, False)
    finally:
        gc.enable()


def test_lwec_run_runs_its_flow_collecting_over_a_frozen_start_up(monkeypatch, sqlite_url, tmp_path):
    import flows.consensus

    gc.unfreeze()  # importing the flow's module froze what this process had made (imports_without_collections)

    seen = []

    def fake_flow(**parameters):
        seen.append(collector_state())
        return {"output_table": "blobs_lwec_labels", "n_objects": 240, "n_clusters_found": 3, "run_key": "r",
                "rows_written": 240, "mlflow_run_id": "abc", "mlflow_experiment": "lwec",
                "mlflow_tracking_uri": "masked"}

    monkeypatch.setattr(flows.consensus, "consensus_flow", fake_flow)
    monkeypatch.setattr(run_cli, "check_before_prefect", lambda request: seen.append(collector_state()))
    write_blobs_table(sqlite_url)
    assert lwec_main(["run", "--database-url", sqlite_url, "--table", "blobs", "-k", "3",
                      "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]) == 0
    assert seen == [(False, False), (True, True)]  # the check held off; the flow collecting, start-up frozen
    assert collector_state() == (True, False)


def test_the_flows_module_imports_without_collections_and_freezes_what_they_made():
    """A deployed run's process imports the flow's module first. In a fresh interpreter."""
    script = ("import gc, json\n"
              "counts = []\n"
              "gc.callbacks.append(lambda phase, info: counts.append(1) if phase == 'start' else None)\n"
              "import flows.consensus\n"
              "print(json.dumps([len(counts), gc.isenabled(), gc.get_freeze_count() > 100000]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    collections, enabled, frozen = json.loads(done.stdout.splitlines()[-1])
    assert enabled and frozen
    assert collections < 50  # those of the interpreter's own start-up and of imports before the flow's module
