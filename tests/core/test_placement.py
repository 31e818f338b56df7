"""Placing new rows into a finished consensus (lwec_tasks.core.placement)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler

from helpers.placement import build_placement, with_ids
from lwec_tasks import Ensemble, lwea, lwgp, nmi
from lwec_tasks.core import placement as placement_module
from lwec_tasks.core.base_clusterings import fit_base_clusterings, generate_base_clusterings
from lwec_tasks.core.eci import eci as cluster_eci
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.lwgp import tcut_cluster_vectors, tcut_embedding
from lwec_tasks.core.mixes import RUN_DEFAULT_MIX
from lwec_tasks.core.placement import Placement, Standardisation, feature_fingerprint

THETA = 0.4
# (training rows, blobs, cluster_std, seed): from well separated to strongly overlapping.
DATASETS = [(600, 3, 1.5, 0), (1000, 4, 2.5, 1), (2000, 5, 3.0, 2), (1500, 3, 4.0, 4)]


def consensus_run(n, centers, std, seed, method, *, n_features=4, ensemble_size=10, lookup=True):
    """Train on n rows, keep n fresh rows of the same blobs; returns (run dict, placement)."""
    X, y = make_blobs(n_samples=2 * n, centers=centers, n_features=n_features, cluster_std=std, random_state=seed)
    train, fresh = X[:n], X[n:]
    scaler = StandardScaler().fit(train)
    base = fit_base_clusterings(scaler.transform(train), ensemble_size, random_state=seed)
    ensemble = Ensemble(base.labels)
    eci = cluster_eci(ensemble, THETA)
    if method == "lwea":
        labels = lwea(ensemble, centers, theta=THETA)
    else:
        labels = lwgp(ensemble, centers, theta=THETA, random_state=seed)
    placement = build_placement(
        Standardisation(scaler.mean_, scaler.scale_), base, ensemble, eci, labels, method, THETA,
        [f"f{j}" for j in range(n_features)], seed=seed, microcluster_lookup=lookup,
    )
    run = dict(train=train, truth=y[:n], fresh=fresh, fresh_truth=y[n:], labels=labels, ensemble=ensemble,
               eci=eci, base=base, scaler=scaler)
    return run, placement


@pytest.mark.parametrize("method", ["lwea", "lwgp"])
@pytest.mark.parametrize("dataset", DATASETS)
def test_training_rows_get_their_labels_back(method, dataset):
    run, placement = consensus_run(*dataset, method)
    reproduced = np.mean(placement.predict(run["train"]) == run["labels"])
    assert reproduced >= 0.95, reproduced


@pytest.mark.parametrize("dataset", DATASETS[:2])
def test_lwea_average_link_rule_alone_reproduces_training_labels(dataset):
    run, placement = consensus_run(*dataset, "lwea", lookup=False)
    assert "micro_codes" not in placement.state
    assert np.mean(placement.predict(run["train"]) == run["labels"]) >= 0.95


@pytest.mark.parametrize("method", ["lwea", "lwgp"])
@pytest.mark.parametrize("dataset", DATASETS)
def test_fresh_rows_score_as_well_as_the_training_rows(method, dataset):
    run, placement = consensus_run(*dataset, method)
    training_nmi = nmi(run["truth"], run["labels"])
    fresh_nmi = nmi(run["fresh_truth"], placement.predict(run["fresh"]))
    assert fresh_nmi >= training_nmi - 0.05, (training_nmi, fresh_nmi)


def test_base_codes_of_training_rows_are_their_base_labels():
    run, placement = consensus_run(600, 3, 2.0, 5, "lwea")
    np.testing.assert_array_equal(placement.base_codes(run["train"]), run["ensemble"].global_codes)


def test_the_model_gives_training_rows_their_codes_under_the_run_default_mix():
    """Prototype generators, and duplicated rows (exact ties between prototypes): the model places rows by the
    rule the base clusterings placed them with, so every training row gets its codes back."""
    X, _ = make_blobs(500, centers=4, n_features=3, cluster_std=2.0, random_state=8)
    X = np.concatenate([X, X[:100]]).round(1)  # repeated and coinciding rows
    scaler = StandardScaler().fit(X)
    base = fit_base_clusterings(scaler.transform(X), 6, random_state=2, generators=RUN_DEFAULT_MIX)
    ensemble = Ensemble(base.labels)
    eci = cluster_eci(ensemble, THETA)
    labels = lwea(ensemble, 4, theta=THETA)
    placement = build_placement(Standardisation(scaler.mean_, scaler.scale_), base, ensemble, eci, labels, "lwea",
                                THETA, ["f0", "f1", "f2"], seed=2)
    np.testing.assert_array_equal(placement.base_codes(X), ensemble.global_codes)


def test_fit_base_clusterings_labels_are_nearest_centres_and_match_generate():
    X, _ = make_blobs(300, centers=4, n_features=3, random_state=2)
    base = fit_base_clusterings(X, 5, random_state=9)
    np.testing.assert_array_equal(base.labels, generate_base_clusterings(X, 5, random_state=9))
    assert len(base.centres) == 5
    for m, centres in enumerate(base.centres):
        assert centres.dtype == np.float64 and centres.shape[1] == 3
        distances = ((X[:, None, :] - centres[None]) ** 2).sum(axis=2)
        np.testing.assert_array_equal(np.argmin(distances, axis=1), base.labels[:, m])


@pytest.mark.parametrize("method", ["lwea", "lwgp"])
def test_save_load_round_trip(tmp_path, method):
    run, placement = consensus_run(500, 3, 2.0, 3, method)
    placement.save(tmp_path / "model")
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == ["placement.json", "placement.npz"]
    loaded = Placement.load(tmp_path / "model")
    assert loaded.metadata() == placement.metadata()
    assert loaded.digest() == placement.digest()
    np.testing.assert_array_equal(loaded.predict(run["fresh"]), placement.predict(run["fresh"]))
    assert loaded.fingerprint == feature_fingerprint(["f0", "f1", "f2", "f3"])
    assert feature_fingerprint(["f1", "f0", "f2", "f3"]) != loaded.fingerprint


def test_load_refuses_a_directory_without_a_placement(tmp_path):
    with pytest.raises(LwecInputError, match="no readable lwec placement"):
        Placement.load(tmp_path)


@pytest.mark.parametrize("method", ["lwea", "lwgp"])
def test_predict_one_row(method):
    run, placement = consensus_run(400, 3, 1.0, 6, method)
    row = run["fresh"][7]
    assert placement.predict(row).shape == (1,)
    assert placement.predict(row[None, :])[0] == placement.predict(run["fresh"])[7]
    assert placement.predict(row).dtype == np.int64


def test_predict_names_a_non_finite_column_and_checks_the_width():
    _, placement = consensus_run(300, 3, 1.0, 6, "lwea")
    rows = np.zeros((3, 4))
    rows[1, 2] = np.nan
    with pytest.raises(LwecInputError, match="'f2'"):
        placement.predict(rows)
    with pytest.raises(LwecInputError, match="4 features"):
        placement.predict(np.zeros((3, 5)))


def test_the_standardisation_is_scikit_learns_from_partition_moments():
    from sklearn.preprocessing import StandardScaler

    from lwec_tasks.stages.sums import Moments, standard_scale

    rng = np.random.default_rng(0)
    raw = np.column_stack([rng.normal(5, 3, 50), np.full(50, 7.25), rng.integers(0, 9, 50)]).astype(np.float64)
    moments = Moments.of(raw[:20]) + Moments.of(raw[20:])  # two partitions
    standardisation = Standardisation(moments.mean, standard_scale(moments))
    assert standardisation.scale[1] == 1.0  # constant column
    np.testing.assert_allclose(standardisation.apply(raw), StandardScaler().fit_transform(raw), atol=1e-12)


def test_with_ids_renumbers_the_written_ids():
    run, placement = consensus_run(400, 3, 1.0, 6, "lwgp")
    renumbered = with_ids(placement, {0: 30, 1: 10, 2: 20})
    np.testing.assert_array_equal(renumbered.predict(run["fresh"]),
                                  np.array([30, 10, 20])[placement.predict(run["fresh"])])
    with pytest.raises(LwecInputError, match="no new id"):
        with_ids(placement, {0: 1})
    with pytest.raises(LwecInputError, match="same id"):
        with_ids(placement, {0: 1, 1: 1, 2: 2})


def test_lwea_matches_dense_lwca_similarities():
    """Reference: the ECI-weighted co-association of each new row with every training object, averaged per cluster."""
    run, placement = consensus_run(300, 3, 2.5, 8, "lwea", ensemble_size=6)
    ensemble, eci, base = run["ensemble"], run["eci"], run["base"]
    fresh = np.vstack([run["fresh"], run["train"][:50]])  # some rows repeat training label rows
    Z = run["scaler"].transform(fresh)
    m_count = ensemble.n_columns
    new_codes = np.empty((len(Z), m_count), dtype=np.int64)
    for m, centres in enumerate(base.centres):
        nearest = np.argmin(np.linalg.norm(Z[:, None, :] - centres[None], axis=2), axis=1)
        column_labels = ensemble.cluster_label[ensemble.offsets[m]:ensemble.offsets[m + 1]]
        new_codes[:, m] = ensemble.offsets[m] + np.searchsorted(column_labels, nearest)
    train_codes = ensemble.global_codes
    # ã(x, j) = (1/M) Σ_m ECI[code_m(x)] · [code_m(x) = code_m(j)]
    similarity = np.zeros((len(Z), ensemble.n_objects))
    for m in range(m_count):
        same = new_codes[:, m, None] == train_codes[None, :, m]
        similarity += eci[new_codes[:, m]][:, None] * same
    similarity /= m_count
    labels = run["labels"]
    scores = np.stack([similarity[:, labels == c].mean(axis=1) for c in range(labels.max() + 1)], axis=1)
    expected = np.argmax(scores, axis=1)
    identical = (new_codes[:, None, :] == train_codes[None]).all(axis=2)
    for i in np.flatnonzero(identical.any(axis=1)):
        expected[i] = labels[np.argmax(identical[i])]
    assert identical.any(axis=1).sum() >= 50
    np.testing.assert_array_equal(placement.predict(fresh), expected)


def test_lwgp_matches_the_incidence_matrix_transfer():
    """Reference: Dx⁻¹ B U with B the explicit 0/1 incidence matrix, row-normalised, nearest label mean."""
    run, placement = consensus_run(300, 3, 2.5, 8, "lwgp", ensemble_size=6)
    ensemble, eci, labels = run["ensemble"], run["eci"], run["labels"]
    k = labels.max() + 1
    U, _ = tcut_cluster_vectors(ensemble, eci, k)

    def embed(codes):
        B = np.zeros((len(codes), ensemble.n_clusters_total))
        np.put_along_axis(B, codes, 1.0, axis=1)
        rows = (B @ U) / (B @ eci)[:, None]
        return rows / (np.linalg.norm(rows, axis=1, keepdims=True) + 1e-10)

    training = embed(ensemble.global_codes)
    # The same transfer as the consensus itself.
    reference = tcut_embedding(ensemble, eci, k)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True) + 1e-10
    np.testing.assert_allclose(training, reference, atol=1e-10)
    centres = np.stack([training[labels == c].mean(axis=0) for c in range(k)])
    fresh = run["fresh"]
    new = embed(placement.base_codes(fresh))
    expected = np.argmin(np.linalg.norm(new[:, None, :] - centres[None], axis=2), axis=1)
    np.testing.assert_array_equal(placement.predict(fresh), expected)


@settings(max_examples=25)
@given(
    n=st.integers(30, 90),
    d=st.integers(1, 3),
    ensemble_size=st.integers(2, 5),
    k=st.integers(2, 3),
    method=st.sampled_from(["lwea", "lwgp"]),
    seed=st.integers(0, 10_000),
)
def test_prediction_properties(n, d, ensemble_size, k, method, seed):
    """Row order, chunking and saving do not change a row's id; ids are the run's cluster ids."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) + rng.integers(0, 3, size=(n, 1)) * 4.0
    base = fit_base_clusterings(X, ensemble_size, k_max=6, random_state=seed)
    ensemble = Ensemble(base.labels)
    if ensemble.n_microclusters < k:
        return
    eci = cluster_eci(ensemble, THETA)
    labels = lwea(ensemble, k) if method == "lwea" else lwgp(ensemble, k, random_state=seed)
    placement = build_placement(None, base, ensemble, eci, labels + 5, method, THETA, [f"x{j}" for j in range(d)])
    fresh = rng.normal(size=(40, d)) * 3.0
    predicted = placement.predict(fresh)
    assert set(predicted) <= set(labels + 5)
    permutation = rng.permutation(len(fresh))
    np.testing.assert_array_equal(placement.predict(fresh[permutation]), predicted[permutation])
    original = placement_module.PREDICT_CHUNK
    try:
        placement_module.PREDICT_CHUNK = 7
        np.testing.assert_array_equal(placement.predict(fresh), predicted)
    finally:
        placement_module.PREDICT_CHUNK = original
    if method == "lwea":  # the microcluster lookup gives every unsplit training microcluster its label
        assert np.mean(placement.predict(X) == labels + 5) >= 0.95
