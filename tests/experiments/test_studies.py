"""θ / ensemble-size sweeps, t-test significance tables, figures and the studies flow."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from helpers.pools import save_npz, synthetic_pool
from lwec_tasks import LwecInputError
from lwec_tasks.cli import main
from lwec_tasks.experiments.reproduce import reproduce
from lwec_tasks.experiments.studies import (
    ensemble_size_sweep,
    plot_sweep,
    significance,
    t_test,
    tally_markdown,
    theta_sweep,
    write_rows,
)


def test_t_test_verdicts():
    low = [0.50, 0.52, 0.51, 0.49, 0.50]
    high = [0.60, 0.62, 0.61, 0.59, 0.61]
    p, verdict = t_test(high, low)
    assert verdict == "better" and p == pytest.approx(stats.ttest_ind(high, low).pvalue) and p < 0.05
    assert t_test(low, high)[1] == "worse"
    assert t_test(low, [0.51, 0.49, 0.50, 0.52, 0.50])[1] == "comparable"
    assert t_test([0.3, 0.3], [0.3, 0.3]) == (1.0, "comparable")
    with pytest.raises(LwecInputError, match="at least 2 runs"):
        t_test([0.1], [0.2, 0.3])


def fake_result(dataset: str, scores: dict[str, list[float]]) -> dict:
    methods = {}
    for name, values in scores.items():
        per_run = {metric: {"best_k": values, "true_k": values} for metric in ("nmi", "ari")}
        methods[name] = {"per_run": per_run}
    return {"dataset": dataset, "methods": methods}


def test_significance_counts_per_dataset_and_criterion():
    results = [
        fake_result("A", {"LWEA": [0.9, 0.91, 0.92], "EAC": [0.5, 0.52, 0.51]}),
        fake_result("B", {"LWEA": [0.5, 0.52, 0.51], "EAC": [0.9, 0.91, 0.92]}),
        fake_result("C", {"LWEA": [0.5, 0.6, 0.55], "EAC": [0.52, 0.58, 0.55]}),
    ]
    tests, tally = significance(results, ours=["LWEA"])
    assert len(tests) == 3 * 2 * 2  # datasets × metrics × criteria
    nmi = next(t for t in tally if t["metric"] == "nmi")
    # Each dataset counts once per criterion (best-k, true-k), as in the paper.
    assert (nmi["better"], nmi["comparable"], nmi["worse"]) == (2, 2, 2)
    table = tally_markdown(tally, "nmi")
    assert "| LWEA | (2/2/2) |" in table


def test_theta_sweep_rows_equal_reproduce_at_each_theta():
    pool = synthetic_pool(seed=4)
    rows = theta_sweep(pool, [0.2, 1.0], methods="LWEA", runs=2, ensemble_size=4, seed=3, ks="2..6")
    assert len(rows) == 2 * 1 * 2 * 2
    at_one = reproduce(pool, runs=2, ensemble_size=4, theta=1.0, seed=3, methods="LWEA", ks="2..6")
    row = next(r for r in rows if r["theta"] == 1.0 and r["metric"] == "ari" and r["criterion"] == "best_k")
    assert row["mean"] == at_one["methods"]["LWEA"]["ari"]["best_k"]["mean"]


def test_ensemble_size_sweep_and_its_errors():
    pool = synthetic_pool(n_candidates=8)
    rows = ensemble_size_sweep(pool, [2, 8], methods="EAC", runs=2, seed=0, ks="2..5")
    assert sorted({r["ensemble_size"] for r in rows}) == [2, 8]
    with pytest.raises(LwecInputError, match=r"ensemble size\(s\) \[10\] exceed the 8 clusterings"):
        ensemble_size_sweep(pool, [5, 10], methods="EAC", runs=2)


def test_outputs_and_figure(tmp_path):
    rows = theta_sweep(synthetic_pool(), [0.1, 0.4, 4.0], methods="LWEA,LWGP", runs=2, ensemble_size=4,
                       ks="2..6")
    csv_path, json_path = write_rows(rows, tmp_path, "theta")
    assert csv_path.read_text().splitlines()[0].startswith("dataset,theta,method,metric,criterion,mean")
    assert json.loads(json_path.read_text()) == rows
    figure = plot_sweep(rows, "theta", tmp_path / "fig.png", log_x=True)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 5000


def test_cli_studies(tmp_path, capsys):
    path = save_npz(tmp_path, synthetic_pool())
    out = tmp_path / "studies"
    assert main(["study", "theta", str(path), "--thetas", "0.2,1", "--runs", "2", "--ks", "2..6",
                 "--ensemble-size", "4", "--out", str(out)]) == 0
    assert (out / "theta_sweep.csv").exists() and (out / "nmi_vs_theta.png").exists()
    assert main(["study", "size", str(path), "--sizes", "3,6", "--runs", "2", "--ks", "2..6",
                 "--methods", "LWEA,EAC", "--out", str(out)]) == 0
    assert (out / "nmi_vs_ensemble_size.png").exists()
    assert main(["study", "size", str(path), "--sizes", "3,60", "--runs", "2", "--out", str(out)]) == 2
    result = tmp_path / "r.json"
    assert main(["reproduce", str(path), "--runs", "3", "--ensemble-size", "4", "--ks", "2..6",
                 "--methods", "LWEA,EAC,KCC", "--json", str(result)]) == 0
    capsys.readouterr()
    assert main(["study", "significance", str(result), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| NMI | EAC | KCC |" in printed and "| LWEA |" in printed
    assert (out / "significance_tally.csv").exists()
    paper = tmp_path / "paper.csv"
    paper.write_text("dataset,method,metric,best_k_mean,best_k_std,true_k_mean,true_k_std\n"
                     "toy,LWEA,nmi,0.0,0.1,0.0,0.1\n")
    assert main(["study", "compare", str(result), "--paper-scores", str(paper)]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("| toy | LWEA"))
    assert "/ 0.000**" in line  # far from the made-up published value → flagged in bold


#: Every file a full run of the studies writes (CLI: theta + size + significance; flow: one run).
STUDY_FILES = {
    "theta_sweep.csv", "theta_sweep.json", "nmi_vs_theta.png", "ari_vs_theta.png",
    "ensemble_size_sweep.csv", "ensemble_size_sweep.json", "nmi_vs_ensemble_size.png", "ari_vs_ensemble_size.png",
    "significance_tests.csv", "significance_tests.json", "significance_tally.csv", "significance_tally.json",
    "significance.md",
}
#: Small flow parameters shared by the flow tests (and mirrored by the CLI commands below).
FLOW_PARAMETERS = dict(methods=["LWEA", "EAC"], runs=2, ensemble_size=4, ks="2..6", thetas=[0.4, 2.0],
                       sizes=[3, 5], sweep_methods=["LWEA"])


def save_pool(directory, name: str, seed: int = 0):
    """A synthetic pool saved as ``<directory>/<name>.npz`` (its report name is ``name``)."""
    pool = synthetic_pool(seed=seed)
    path = directory / f"{name}.npz"
    np.savez(path, members=pool.members, gt=pool.truth)
    return path


def without_seconds(rows: list[dict]) -> list[dict]:
    return [{key: value for key, value in row.items() if key != "seconds"} for row in rows]


def test_sweep_writes_rows_and_both_figures(tmp_path):
    from lwec_tasks.experiments.studies import run_sweep

    path = save_pool(tmp_path, "toy")
    output = run_sweep("ensemble_size", [str(path)], [3, 6], tmp_path / "out", methods="LWEA", runs=2, ks="2..6")
    assert [p.name for p in output.files] == ["ensemble_size_sweep.csv", "ensemble_size_sweep.json",
                                              "nmi_vs_ensemble_size.png", "ari_vs_ensemble_size.png"]
    assert output.rows == 2 * 1 * 2 * 2 and "ari_vs_ensemble_size.png" in output.markdown
    with pytest.raises(LwecInputError, match="unknown sweep"):
        run_sweep("k", [str(path)], [2], tmp_path / "out", methods="LWEA")


@pytest.mark.slow
def test_studies_flow_and_cli_write_the_same_files(tmp_path, prefect_server):
    from flows.studies import RESULTS_DIR, paper_studies

    path = save_pool(tmp_path, "toy")
    flow_out, cli_out = tmp_path / "flow", tmp_path / "cli"
    summary = paper_studies(pools=[str(path)], out_dir=str(flow_out), **FLOW_PARAMETERS)
    assert "Significance" in summary and "(" in summary
    assert "nmi_vs_theta.png, ari_vs_theta.png" in summary

    common = ["--runs", "2", "--ks", "2..6", "--methods", "LWEA", "--out", str(cli_out)]
    assert main(["study", "theta", str(path), "--thetas", "0.4,2", "--ensemble-size", "4", *common]) == 0
    assert main(["study", "size", str(path), "--sizes", "3,5", "--theta", "0.4", *common]) == 0
    result = tmp_path / "reproduce_toy.json"
    assert main(["reproduce", str(path), "--runs", "2", "--ensemble-size", "4", "--ks", "2..6",
                 "--methods", "LWEA,EAC", "--json", str(result)]) == 0
    assert main(["study", "significance", str(result), "--out", str(cli_out)]) == 0

    cli_files = {p.name for p in cli_out.iterdir()}
    flow_files = {p.name for p in flow_out.iterdir()} - {"reproduce_toy.json", RESULTS_DIR}
    assert cli_files == flow_files == STUDY_FILES
    # Same functions, same seeds: the same rows (timings aside) and the same tests.
    for stem in ("theta_sweep", "ensemble_size_sweep"):
        assert without_seconds(json.loads((cli_out / f"{stem}.json").read_text())) == \
            without_seconds(json.loads((flow_out / f"{stem}.json").read_text()))
    assert (cli_out / "significance_tests.json").read_text() == (flow_out / "significance_tests.json").read_text()
    assert json.loads((flow_out / "reproduce_toy.json").read_text())["methods"]["EAC"]["per_run"]["nmi"] == \
        json.loads(result.read_text())["methods"]["EAC"]["per_run"]["nmi"]


def task_run_states(flow_state) -> dict[str, list[str]]:
    """State names of the flow run's task runs, by task name (waits for the API to have them all)."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    flow_run_id = flow_state.state_details.flow_run_id
    deadline = time.monotonic() + 30
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            settled = runs and all(run.state is not None and run.state.is_final() for run in runs)
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    states: dict[str, list[str]] = {}
    for run in runs:
        states.setdefault(run.name.rsplit("-", 1)[0], []).append(run.state.name)
    return states


@pytest.fixture
def counted_pool_loads(monkeypatch):
    """Pool paths loaded by the studies (in call order); set ``fail_on`` to make one pool's load fail."""
    from lwec_tasks.experiments import studies

    real = studies.load_pool
    calls: list[str] = []
    failing: set[str] = set()

    def load_pool(source, *args, **kwargs):
        calls.append(str(source))
        if str(source) in failing:
            raise RuntimeError(f"simulated crash while loading {source}")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(studies, "load_pool", load_pool)
    return calls, failing


@pytest.mark.slow
def test_studies_flow_serves_finished_pools_from_its_cache(tmp_path, prefect_server, counted_pool_loads):
    from flows.studies import RESULTS_DIR, paper_studies

    calls, _ = counted_pool_loads
    pools = [str(save_pool(tmp_path, "first", seed=1)), str(save_pool(tmp_path, "second", seed=2))]
    out = tmp_path / "out"
    first = paper_studies(pools=pools, out_dir=str(out), **FLOW_PARAMETERS, return_state=True)
    assert first.is_completed()
    assert sorted(calls) == sorted(pools * 3)  # reproduce, θ sweep, size sweep per pool
    assert (out / RESULTS_DIR).is_dir()

    calls.clear()
    (out / "theta_sweep.csv").unlink()
    second = paper_studies(pools=pools, out_dir=str(out), **FLOW_PARAMETERS, return_state=True)
    assert second.is_completed() and second.result() == first.result()
    assert calls == []  # no pool was loaded again: every per-pool task came from the cache
    states = task_run_states(second)
    for name in ("reproduce_pool", "sweep_theta", "sweep_ensemble_size"):
        assert states[name] == ["Cached", "Cached"], (name, states)
    assert states["write_outputs"] == ["Completed"]
    assert (out / "theta_sweep.csv").exists()  # outputs are rewritten from the cached rows

    calls.clear()
    changed = paper_studies(pools=pools, out_dir=str(out), **{**FLOW_PARAMETERS, "thetas": [0.4]})
    assert "θ sweep" in changed
    assert calls == pools  # only the θ sweep, whose inputs changed, ran again


@pytest.mark.slow
def test_a_failed_studies_flow_resumes_after_the_last_finished_pool(tmp_path, prefect_server, counted_pool_loads):
    from flows.studies import paper_studies

    calls, failing = counted_pool_loads
    done, crashed = str(save_pool(tmp_path, "done", seed=1)), str(save_pool(tmp_path, "crashed", seed=2))
    out = tmp_path / "out"
    failing.add(crashed)
    with pytest.raises(RuntimeError, match="simulated crash"):
        paper_studies(pools=[done, crashed], out_dir=str(out), **FLOW_PARAMETERS)
    assert calls == [done, done, done, crashed]
    assert not (out / "theta_sweep.csv").exists()

    calls.clear()
    failing.clear()
    summary = paper_studies(pools=[done, crashed], out_dir=str(out), **FLOW_PARAMETERS)
    assert calls == [crashed, crashed, crashed]  # the finished pool was not recomputed
    assert "Significance" in summary
    rows = json.loads((out / "theta_sweep.json").read_text())
    assert {row["dataset"] for row in rows} == {"done", "crashed"}


