"""θ / ensemble-size sweeps, t-test significance tables, figures and the studies flow."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from lwec_tasks import LwecInputError
from lwec_tasks.cli import main
from lwec_tasks.experiments.reproduce import reproduce
from lwec_tasks.experiments.studies import (
    ensemble_size_sweep,
    plot_sweep,
    significance,
    tally_markdown,
    t_test,
    theta_sweep,
    write_rows,
)
from helpers.pools import save_npz, synthetic_pool


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


@pytest.mark.slow
def test_studies_flow(tmp_path, prefect_server):
    from flows.studies import paper_studies

    path = save_npz(tmp_path, synthetic_pool())
    out = tmp_path / "flow"
    summary = paper_studies(pools=[str(path)], out_dir=str(out), methods=["LWEA", "EAC"], runs=2,
                            ensemble_size=4, ks="2..6", thetas=[0.4, 2.0], sizes=[3, 5],
                            sweep_methods=["LWEA"])
    assert "Significance" in summary and "(" in summary
    for name in ("reproduce_toy.json", "theta_sweep.csv", "ensemble_size_sweep.csv",
                 "nmi_vs_theta.png", "nmi_vs_ensemble_size.png", "significance_tally.csv"):
        assert (out / name).exists(), name


