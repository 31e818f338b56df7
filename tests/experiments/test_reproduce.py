"""The reproduction protocol and ``lwec reproduce`` on small synthetic pools."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from helpers.pools import save_npz, synthetic_pool
from lwec_tasks import LwecInputError
from lwec_tasks.baselines import eac
from lwec_tasks.cli import main
from lwec_tasks.experiments.reproduce import draw_columns, method_seed, parse_ks, reproduce


def test_parse_ks():
    assert parse_ks("2..5") == [2, 3, 4, 5]
    assert parse_ks("2..4,10, 3") == [2, 3, 4, 10]
    assert parse_ks([5, 2]) == [2, 5]
    for bad, message in [("1..3", ">= 2"), ("5..2", "empty"), ("a", "cannot read"), ("", "empty")]:
        with pytest.raises(LwecInputError, match=message):
            parse_ks(bad)


def test_draws_are_seeded_by_seed_and_run():
    a = draw_columns(100, 10, seed=3, run=0)
    assert len(set(a.tolist())) == 10 and a.max() < 100
    np.testing.assert_array_equal(a, draw_columns(100, 10, seed=3, run=0))
    assert not np.array_equal(a, draw_columns(100, 10, seed=3, run=1))
    assert not np.array_equal(a, draw_columns(100, 10, seed=4, run=0))
    assert method_seed(3, 0) == method_seed(3, 0) != method_seed(3, 1)


def test_summary_matches_an_independent_computation():
    pool = synthetic_pool()
    ks = [2, 3, 4, 5, 6]
    result = reproduce(pool, runs=3, ensemble_size=5, seed=11, methods="EAC", ks=ks)
    best, true, ari_best = [], [], []
    for run in range(3):
        columns = draw_columns(pool.n_candidates, 5, 11, run)
        assert result["draws"][run] == columns.tolist()
        cuts = eac(pool.members[:, columns], ks)
        nmis = [normalized_mutual_info_score(pool.truth, cuts[:, j], average_method="max") for j in range(5)]
        aris = [adjusted_rand_score(pool.truth, cuts[:, j]) for j in range(5)]
        best.append(max(nmis))
        true.append(nmis[ks.index(4)])
        ari_best.append(max(aris))
    summary = result["methods"]["EAC"]
    assert summary["nmi"]["best_k"]["mean"] == pytest.approx(np.mean(best))
    assert summary["nmi"]["best_k"]["std"] == pytest.approx(np.std(best, ddof=1))
    assert summary["nmi"]["true_k"]["mean"] == pytest.approx(np.mean(true))
    assert summary["ari"]["best_k"]["mean"] == pytest.approx(np.mean(ari_best))
    assert result["n_classes"] == 4


def test_every_method_sees_the_same_draws_and_reruns_are_identical():
    pool = synthetic_pool(seed=2)
    both = reproduce(pool, runs=3, ensemble_size=4, seed=5, methods="KCC,EAC", ks="2..6")
    alone = reproduce(pool, runs=3, ensemble_size=4, seed=5, methods="EAC", ks="2..6")
    again = reproduce(pool, runs=3, ensemble_size=4, seed=5, methods="KCC,EAC", ks="2..6")
    assert both["draws"] == alone["draws"]
    for metric in ("nmi", "ari"):
        assert both["methods"]["EAC"]["per_run"][metric] == alone["methods"]["EAC"]["per_run"][metric]
        assert both["methods"]["KCC"]["per_run"][metric] == again["methods"]["KCC"]["per_run"][metric]


def test_true_k_is_null_when_the_class_count_is_not_among_ks():
    result = reproduce(synthetic_pool(), runs=2, ensemble_size=3, methods="EAC", ks="2..3")
    assert result["methods"]["EAC"]["nmi"]["true_k"] == {"mean": None, "std": None}
    assert result["methods"]["EAC"]["nmi"]["best_k"]["mean"] is not None


def test_cli_json_shape_table_and_progress(tmp_path, capsys):
    path = save_npz(tmp_path, synthetic_pool())
    out = tmp_path / "out" / "result.json"
    code = main(
        [
            "reproduce", str(path), "--runs", "3", "--ensemble-size", "5", "--theta", "0.4",
            "--seed", "1", "--methods", "LWEA,LWGP,EAC,MCLA", "--ks", "2..8", "--json", str(out),
        ]
    )
    assert code == 0
    stdout = capsys.readouterr().out
    assert "run 3/3 MCLA" in stdout
    assert "NMI best-k" in stdout and "LWGP" in stdout
    assert "LWEA auto-k: NMI" in stdout and "LWGP auto-k: NMI" in stdout and "EAC auto-k" not in stdout
    document = json.loads(out.read_text())
    assert document["dataset"] == "toy"
    assert (document["n_objects"], document["runs"], document["ensemble_size"]) == (70, 3, 5)
    assert document["theta"] == 0.4
    assert list(document["methods"]) == ["LWEA", "LWGP", "EAC", "MCLA"]
    for summary in document["methods"].values():
        for metric in ("nmi", "ari"):
            for criterion in ("best_k", "true_k"):
                stats = summary[metric][criterion]
                assert -1 <= stats["mean"] <= 1 and stats["std"] >= 0
            assert summary[metric]["best_k"]["mean"] >= summary[metric]["true_k"]["mean"]
        assert summary["seconds"]["mean"] > 0
    # The blocks are easy: LWEA finds them (NMI near 1 at k = 4 or 5).
    assert document["methods"]["LWEA"]["nmi"]["best_k"]["mean"] > 0.8


def test_cli_json_to_stdout_sends_progress_to_stderr(tmp_path, capsys):
    path = save_npz(tmp_path, synthetic_pool())
    code = main(["reproduce", str(path), "--runs", "2", "--ensemble-size", "3", "--methods", "EAC",
                 "--ks", "2..5", "--json", "-"])
    assert code == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["methods"]["EAC"]["nmi"]["best_k"]["mean"] > 0
    assert "run 2/2 EAC" in captured.err


@pytest.mark.parametrize(
    ("pool", "args", "message"),
    [
        (synthetic_pool(n_candidates=6), ["--ensemble-size", "10"], "ensemble-size 10 is larger than the pool.*only 6"),
        (synthetic_pool(with_truth=False), [], "has no ground truth"),
        (synthetic_pool(), ["--methods", "LWEA,SPECTRAL"], "unknown method.*'SPECTRAL'.*known methods"),
        (synthetic_pool(), ["--runs", "0"], "--runs must be >= 1"),
        (synthetic_pool(), ["--theta", "-1"], "theta must be finite and > 0"),
        (synthetic_pool(), ["--seed", "-1"], "seed must be a non-negative integer, got -1"),
        (
            synthetic_pool(),
            ["--ensemble-size", "1", "--ks", "2..9"],
            r"run 1/2, method LWEA, pool columns \[\d+\]: n_clusters=\d is larger than the number of microclusters",
        ),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(tmp_path, capsys, pool, args, message):
    path = save_npz(tmp_path, pool)
    code = main(["reproduce", str(path), "--runs", "2", "--ensemble-size", "4", "--ks", "2..5", *args])
    assert code == 2
    assert __import__("re").search(message, capsys.readouterr().err)


def test_mlflow_parent_run_with_nested_runs_per_method(tmp_path, capsys):
    mlflow = pytest.importorskip("mlflow")
    path = save_npz(tmp_path, synthetic_pool())
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code = main(["reproduce", str(path), "--runs", "2", "--ensemble-size", "4", "--methods", "LWEA,EAC",
                 "--ks", "2..5", "--mlflow", "--tracking-uri", uri, "--experiment", "repro-test"])
    assert code == 0
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("repro-test")
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and len(children) == 2
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parents[0].info.run_id}
    lwea_run = next(c for c in children if c.data.tags["method"] == "LWEA")
    assert 0 < lwea_run.data.metrics["nmi_best_k_mean"] <= 1
    assert parents[0].data.params["ensemble_size"] == "4"


def test_cut_scores_equal_scikit_learn():
    from lwec_tasks.experiments.reproduce import cut_scores

    rng = np.random.default_rng(0)
    truth = rng.integers(0, 5, 300)
    cuts = np.column_stack([rng.integers(0, k, 300) for k in (1, 2, 7, 40)]
                           + [truth * 3 + 1, np.where(rng.random(300) < 0.2, 9, truth)])
    scores = cut_scores(cuts, truth)
    for j in range(cuts.shape[1]):
        assert scores["nmi"][j] == pytest.approx(
            normalized_mutual_info_score(truth, cuts[:, j], average_method="max"), abs=1e-12)
        assert scores["ari"][j] == pytest.approx(adjusted_rand_score(truth, cuts[:, j]), abs=1e-12)
    single = cut_scores(np.zeros((4, 1), int), np.zeros(4, int))
    assert (single["nmi"][0], single["ari"][0]) == (1.0, 1.0)


def test_cli_reads_a_pool_from_a_sql_table(tmp_path, capsys):
    import pandas as pd
    import sqlalchemy as sa

    pool = synthetic_pool()
    url = f"sqlite:///{tmp_path / 'pools.db'}"
    engine = sa.create_engine(url)
    frame = pd.DataFrame(pool.members, columns=[f"bc{j}" for j in range(pool.n_candidates)])
    frame.assign(gt=pool.truth).to_sql("toy_pool", engine, index=False)
    engine.dispose()
    code = main(["reproduce", url, "--table", "toy_pool", "--runs", "2", "--ensemble-size", "4",
                 "--methods", "EAC", "--ks", "2..6", "--json", "-"])
    assert code == 0
    from_sql = json.loads(capsys.readouterr().out)
    direct = reproduce(pool, runs=2, ensemble_size=4, methods="EAC", ks="2..6")
    assert from_sql["dataset"] == "toy_pool"
    assert from_sql["methods"]["EAC"]["per_run"]["nmi"] == direct["methods"]["EAC"]["per_run"]["nmi"]


def test_auto_k_entries_for_lwea_and_lwgp_only():
    from lwec_tasks.core.auto_k import select_k

    pool = synthetic_pool()
    result = reproduce(pool, runs=3, ensemble_size=5, seed=2, methods="LWEA,LWGP,EAC", ks="2..8")
    for name in ("LWEA", "LWGP"):
        summary = result["methods"][name]
        chosen = summary["per_run"]["auto_k_chosen"]
        assert len(chosen) == 3 and all(isinstance(k, int) for k in chosen)
        assert summary["auto_k_chosen"]["mean"] == pytest.approx(np.mean(chosen))
        for metric in ("nmi", "ari"):
            assert set(summary[metric]) == {"best_k", "true_k", "auto_k"}
            assert len(summary["per_run"][metric]["auto_k"]) == 3
            assert -1 <= summary[metric]["auto_k"]["mean"] <= 1
        for run, k in enumerate(chosen):
            labels = pool.members[:, draw_columns(pool.n_candidates, 5, 2, run)]
            assert k == select_k(labels, name, random_state=method_seed(2, run)).k
    eac_summary = result["methods"]["EAC"]
    assert "auto_k_chosen" not in eac_summary and "auto_k" not in eac_summary["nmi"]


def test_without_auto_k_the_cuts_scores_are_the_same_and_no_auto_k_entries():
    pool = synthetic_pool()
    with_auto = reproduce(pool, runs=2, ensemble_size=5, seed=4, methods="LWEA,LWGP", ks="2..8")
    without = reproduce(pool, runs=2, ensemble_size=5, seed=4, methods="LWEA,LWGP", ks="2..8", auto_k=False)
    for name in ("LWEA", "LWGP"):
        summary = without["methods"][name]
        assert "auto_k_chosen" not in summary and "auto_k_chosen" not in summary["per_run"]
        for metric in ("nmi", "ari"):
            assert set(summary[metric]) == {"best_k", "true_k"}
            for criterion in ("best_k", "true_k"):
                assert summary["per_run"][metric][criterion] == \
                    with_auto["methods"][name]["per_run"][metric][criterion]
