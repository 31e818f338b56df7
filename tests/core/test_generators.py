"""Base-clustering generators: seeded, shaped, placing rows by their nearest prototype, and the mixes."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from lwec_tasks import LwecInputError, generate_base_clusterings
from lwec_tasks import request as request_module
from lwec_tasks.core import generators as gen
from lwec_tasks.core import mixes
from lwec_tasks.core.base_clusterings import fit_base_clusterings
from lwec_tasks.request import ConsensusRequest

OTHERS = [g for g in mixes.GENERATORS if g != "kmeans"]
EVERY = ",".join(mixes.GENERATORS)


@pytest.fixture(scope="module")
def blobs():
    X, truth = make_blobs(600, n_features=3, centers=4, cluster_std=1.0, random_state=5)
    return X, truth


@pytest.mark.parametrize("kind", OTHERS)
def test_each_generator_gives_the_same_labels_for_the_same_seed(blobs, kind):
    X, _ = blobs
    a = gen.fit_generator(kind, X, 5, 11, 10_000)
    b = gen.fit_generator(kind, X, 5, 11, 10_000)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)


@pytest.mark.parametrize("kind", ["spectral", "gmm", "subspace", "dbscan"])
def test_a_seeded_generator_differs_between_seeds_on_structureless_data(kind):
    X = np.random.default_rng(0).uniform(size=(400, 4))
    labellings = [gen.fit_generator(kind, X, 6, seed, 10_000).predict(X) for seed in range(4)]
    assert any(adjusted_rand_score(labellings[0], other) < 0.99 for other in labellings[1:])


def test_genie_draws_its_threshold_and_its_sample_from_the_seed(monkeypatch):
    X = np.random.default_rng(1).uniform(size=(600, 2))
    monkeypatch.setattr(gen, "FIT_SAMPLE", 300)
    labellings = [generate_base_clusterings(X, 1, random_state=seed, generators="genie")[:, 0] for seed in range(4)]
    assert any(adjusted_rand_score(labellings[0], other) < 0.99 for other in labellings[1:])
    again = generate_base_clusterings(X, 1, random_state=0, generators="genie")[:, 0]
    np.testing.assert_array_equal(again, labellings[0])


@pytest.mark.parametrize("kind", OTHERS)
def test_well_separated_blobs_are_found_by_every_generator_but_dbscan_at_their_k(blobs, kind):
    X, truth = blobs
    found = gen.fit_generator(kind, X, 4, 3, 10_000).predict(X)
    if kind == "dbscan":  # no k: it finds the dense regions, at least the four blobs' worth of them
        assert adjusted_rand_score(truth, found) > 0.5
    else:
        assert adjusted_rand_score(truth, found) > 0.95


def _generalised_transfer_cut(B, n_vectors):
    """Reference: the n_vectors smallest generalised eigenvectors of (Dy − Wy) v = λ Dy v by dense LAPACK,
    transferred to the rows, with their eigenvalues."""
    B = B.toarray()
    dx = B.sum(axis=1) + 1e-12
    Wy = B.T @ (B / dx[:, None])
    dy = Wy.sum(axis=1) + 1e-12
    values, vectors = scipy.linalg.eigh(np.diag(dy) - Wy, np.diag(dy))
    return (B @ vectors[:, :n_vectors]) / dx[:, None], values


def _row_anchor_graph(n, p, K, rng, blocks=1):
    """(n, p) CSR: each row linked to K random anchors of its block by positive weights."""
    block_of_row = np.arange(n) % blocks
    anchors = np.array_split(np.arange(p), blocks)
    columns = np.concatenate([rng.choice(anchors[b], size=K, replace=False) for b in block_of_row])
    weights = rng.uniform(0.05, 1.0, size=n * K)
    return sp.csr_matrix((weights, columns, np.arange(0, n * K + 1, K)), shape=(n, p))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(20, 200), p=st.integers(4, 30), n_vectors=st.integers(1, 6), seed=st.integers(0, 2**31))
def test_the_transfer_cut_embedding_is_the_generalised_eigenproblems(n, p, n_vectors, seed):
    rng = np.random.default_rng(seed)
    B = _row_anchor_graph(n, p, min(3, p), rng)
    n_vectors = min(n_vectors, p - 1)
    reference, values = _generalised_transfer_cut(B, n_vectors)
    gaps = np.diff(values[:n_vectors + 1])
    assume(gaps.min() > 1e-6)  # simple eigenvalues: each vector is defined up to its sign
    ours = gen.transfer_cut_embedding(B, n_vectors)
    signs = np.sign(np.sum(ours * reference, axis=0))
    np.testing.assert_allclose(ours, reference * signs, atol=1e-7 * np.abs(reference).max())


@pytest.mark.parametrize("n_vectors", [1, 2, 3])
def test_a_graph_that_falls_apart_embeds_the_same_after_last_bit_changes(n_vectors):
    """Fewer vectors than components: any rotation of the eigenvalue-1 space solves the eigenproblem, and
    the one a solver returns moves with the last bits of the weights; the fixed basis does not."""
    rng = np.random.default_rng(4)
    B = _row_anchor_graph(400, 40, 3, rng, blocks=5)
    nudged = B.copy()
    nudged.data = nudged.data * (1 + 4e-16 * rng.choice([-1, 1], size=len(nudged.data)))
    np.testing.assert_allclose(gen.transfer_cut_embedding(nudged, n_vectors),
                               gen.transfer_cut_embedding(B, n_vectors), atol=1e-12)


@pytest.mark.parametrize("k", [2, 3])
def test_spectral_labels_survive_last_bit_changes_of_separated_blobs(k):
    """Five far-apart blobs, k below five: the same seed gives the same labels for rows that differ in the
    last bits (as one table standardised over different partitions does)."""
    X, _ = make_blobs(2000, n_features=4, centers=5, cluster_std=0.5, center_box=(-40, 40), random_state=2)
    nudged = X * (1 + 2e-16 * np.random.default_rng(0).choice([-1, 1], size=X.shape))
    for seed in range(6):
        a = gen.fit_generator("spectral", X, k, seed, 10_000).predict(X)
        b = gen.fit_generator("spectral", nudged, k, seed, 10_000).predict(X)
        assert adjusted_rand_score(a, b) == 1.0, seed


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 300), p=st.integers(1, 40), d=st.integers(1, 5), seed=st.integers(0, 2**31))
def test_a_row_takes_the_cluster_of_its_nearest_prototype(n, p, d, seed):
    rng = np.random.default_rng(seed)
    X, centres = rng.normal(size=(n, d)), rng.normal(size=(p, d))
    owners = rng.integers(0, 5, size=p)
    model = gen.Prototypes(centres, owners)
    np.testing.assert_array_equal(model.predict(X), owners[np.argmin(cdist(X, centres, "sqeuclidean"), axis=1)])


@settings(max_examples=25, deadline=None)
@given(n=st.integers(5, 400), k=st.integers(1, 6), budget=st.integers(8, 60), seed=st.integers(0, 1000))
def test_compression_keeps_every_cluster_within_the_budget(n, k, budget, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    labels = rng.integers(0, k, size=n)
    labels[: min(k, n)] = np.arange(min(k, n))  # every cluster has a row
    model = gen.compress(X, labels, budget, seed)
    assert len(model.cluster_centers_) <= budget
    assert set(model.centre_labels.tolist()) == set(labels.tolist())
    if n <= budget:  # the rows themselves: every row keeps its cluster
        np.testing.assert_array_equal(model.predict(X), labels)
    else:  # each prototype lies within its cluster's bounding box
        for c in range(k):
            inside = model.cluster_centers_[model.centre_labels == c]
            members = X[labels == c]
            assert (inside >= members.min(axis=0) - 1e-9).all() and (inside <= members.max(axis=0) + 1e-9).all()


def test_noise_is_a_missing_label_filled_by_the_nearest_clustered_point():
    rng = np.random.default_rng(2)
    X = np.concatenate([rng.normal(0, 0.3, size=(200, 2)), rng.normal(6, 0.3, size=(200, 2)),
                        rng.uniform(-4, 10, size=(12, 2))])
    labels = np.array([0] * 200 + [1] * 200 + [-1] * 12)  # as DBSCAN gives noise
    model = gen.compress(X, gen._compact(labels), 10_000, 0)
    assert len(model.cluster_centers_) == 400 and -1 not in model.centre_labels
    placed = model.predict(X)
    nearest_clustered = labels[:400][np.argmin(cdist(X[400:], X[:400]), axis=1)]
    np.testing.assert_array_equal(placed[400:], nearest_clustered)
    np.testing.assert_array_equal(placed[:400], labels[:400])
    # the generator itself: its noise points are placed, never a label of their own
    found = gen.fit_generator("dbscan", X, 2, 0, 10_000).predict(X)
    assert found.min() == 0 and len(found) == len(X)


def test_label_shapes_of_a_mixed_ensemble(blobs):
    X, _ = blobs
    base = fit_base_clusterings(X, 12, random_state=7, generators=EVERY)
    assert base.labels.shape == (600, 12) and base.labels.dtype == np.int64
    assert len(base.centres) == len(base.centre_labels) == 12
    for m in range(12):
        column = base.labels[:, m]
        assert column.min() >= 0 and column.max() < len(base.centres[m])
        # every row's label is its nearest centre's
        nearest = np.argmin(cdist(X, base.centres[m], "sqeuclidean"), axis=1)
        np.testing.assert_array_equal(column, base.centre_labels[m][nearest])
    np.testing.assert_array_equal(base.labels, generate_base_clusterings(X, 12, random_state=7, generators=EVERY,
                                                                         n_jobs=1))


def test_the_kmeans_mix_is_the_papers_protocol(blobs):
    from sklearn.cluster import KMeans

    from lwec_tasks.core.seeds import base_seed, derived_seed

    X, _ = blobs
    labels = generate_base_clusterings(X, 3, random_state=4, generators="kmeans")
    np.testing.assert_array_equal(labels, generate_base_clusterings(X, 3, random_state=4))
    base = base_seed(4)
    ks = np.random.default_rng(base).integers(2, 24 + 1, size=3)
    for m in range(3):
        expected = KMeans(int(ks[m]), n_init=1, random_state=derived_seed(base, m)).fit_predict(X)
        np.testing.assert_array_equal(labels[:, m], expected)


@settings(max_examples=50, deadline=None)
@given(weights=st.lists(st.integers(0, 5), min_size=len(mixes.GENERATORS), max_size=len(mixes.GENERATORS)),
       m=st.integers(1, 40))
@example(weights=[1, 1, 1, 5, 5, 5], m=11)  # a generator 1.06 clusterings behind its share at the 11th
def test_a_mix_gives_each_generator_its_share_of_every_prefix(weights, m):
    """Smooth weighted round robin: with c_g = w_g · j − total · count_g(j) (its counter), the counters sum to 0
    and the one chosen is ≥ 0 before ``total`` is taken off, so every counter stays above −total: no generator
    ever gets a whole clustering ahead of its share; the others' counters then bound how far one falls behind
    (less than one clustering per other generator in the mix). Every ``total`` clusterings hold each generator
    exactly its weight."""
    if not any(weights):
        return
    text = ",".join(f"{g}:{w}" for g, w in zip(mixes.GENERATORS, weights))
    kinds = mixes.mix_kinds(text, m)
    total = sum(weights)
    others = sum(1 for w in weights if w) - 1
    for j in range(1, m + 1):
        for g, w in zip(mixes.GENERATORS, weights):
            ahead = kinds[:j].count(g) - j * w / total
            assert ahead < 1 - 1e-9
            assert -ahead < max(others, 1) - 1e-9
    for start in range(0, m - total + 1, total):
        cycle = kinds[start:start + total]
        assert [cycle.count(g) for g in mixes.GENERATORS] == list(weights)


@pytest.mark.parametrize("value, canonical", [
    ("kmeans", "kmeans"), ("  KMeans ", "kmeans"), ("genie,kmeans", "kmeans:1,genie:1"),
    ("spectral:3, kmeans:4,genie:3", "kmeans:4,genie:3,spectral:3"), ("lwec", mixes.RUN_DEFAULT_MIX),
    ("paper", "kmeans"),
    ({"genie": 2, "gmm": 0}, "genie"),
])
def test_mixes_are_read_in_one_canonical_spelling(value, canonical):
    assert mixes.canonical_mix(value) == canonical


@pytest.mark.parametrize("value, culprit", [
    ("kmeans,wobble", "'wobble'"), ("genie:two", "'two'"), ("genie:-1", "genie"), ("genie:0", "no generator"),
    (3, "3"), ({"birch": 1}, "'birch'"),
])
def test_bad_mixes_are_refused_naming_the_value(value, culprit):
    with pytest.raises(LwecInputError, match="generators") as error:
        mixes.parse_mix(value)
    assert culprit in str(error.value)


def test_the_request_checks_the_mix_and_keeps_old_run_keys():
    common = dict(database_url="sqlite:///x.db", table="t", n_clusters=3)
    given_none = ConsensusRequest(**common)
    assert given_none.generators is None  # filled in by the table's size once it is read
    default = given_none.for_rows(mixes.RUN_LARGE_TABLE_ROWS)
    assert default.generators == mixes.RUN_DEFAULT_MIX == mixes.canonical_mix(mixes.RUN_DEFAULT_MIX)
    assert given_none.run_key == default.run_key  # a small table's run keeps its key
    paper = ConsensusRequest(**common, generators="kmeans")
    # k-means runs keep the keys they had before there were mixes: the field is left out of the key
    deciding = {k: v for k, v in paper.model_dump().items() if k not in request_module._NOT_IN_RUN_KEY
                and k not in ("generators", "base_columns", "missing_labels")}
    digest = hashlib.sha256(json.dumps(deciding, sort_keys=True, default=list).encode()).hexdigest()
    assert paper.run_key == f"lwea-k3-{digest[:12]}"
    mixed = ConsensusRequest(**common, generators="genie:1,spectral:1")
    assert mixed.generators == "genie:1,spectral:1" and len({mixed.run_key, default.run_key, paper.run_key}) == 3
    with pytest.raises(LwecInputError, match="'wobble'"):
        ConsensusRequest(**common, generators="wobble")


def test_the_run_default_mix_follows_the_tables_size_and_its_weighted_text_columns():
    small, large, rows = mixes.RUN_DEFAULT_MIX, mixes.RUN_DEFAULT_MIX_LARGE, mixes.RUN_LARGE_TABLE_ROWS
    assert [mixes.run_default_mix(n) for n in (2, rows - 1, rows, rows + 1, 10**8)] == [
        small, small, small, large, large]
    categorical = mixes.RUN_DEFAULT_MIX_CATEGORICAL
    assert [mixes.run_default_mix(n, True) for n in (2, rows, rows + 1, 10**8)] == [categorical] * 4
    assert all(mixes.canonical_mix(mix) == mix for mix in (small, large, categorical))


def test_a_request_given_no_mix_takes_the_default_for_its_rows_and_keys_by_it():
    common = dict(database_url="sqlite:///x.db", table="t", n_clusters=3)
    given_none = ConsensusRequest(**common)
    above = given_none.for_rows(mixes.RUN_LARGE_TABLE_ROWS + 1)
    assert above.generators == mixes.RUN_DEFAULT_MIX_LARGE
    assert above.run_key == ConsensusRequest(**common, generators=mixes.RUN_DEFAULT_MIX_LARGE).run_key
    assert above.run_key != given_none.for_rows(mixes.RUN_LARGE_TABLE_ROWS).run_key
    weighted = given_none.for_rows(100, weighted_categories=True)
    assert weighted.generators == mixes.RUN_DEFAULT_MIX_CATEGORICAL
    assert weighted.run_key == ConsensusRequest(**common, generators=mixes.RUN_DEFAULT_MIX_CATEGORICAL).run_key
    chosen = ConsensusRequest(**common, generators="genie")
    assert chosen.for_rows(10**8) == chosen == chosen.for_rows(100, weighted_categories=True)  # a mix given is kept
    # base label columns generate nothing: their runs keep the keys they had
    labelled = ConsensusRequest(**common, base_columns=["a", "b"])
    assert labelled.for_rows(10**8).generators == mixes.RUN_DEFAULT_MIX


def test_the_run_command_has_the_option():
    from lwec_tasks.cli import build_parser

    args = build_parser().parse_args(["run", "--database-url", "sqlite:///x.db", "--table", "t", "-k", "3",
                                      "--generators", "genie:2,kmeans:1"])
    assert args.generators == "genie:2,kmeans:1"


@pytest.mark.parametrize("method", ["lwea", "lwgp"])
def test_automatic_k_finds_well_separated_blobs_in_a_mixed_ensemble(blobs, method):
    from lwec_tasks.core.auto_k import auto_consensus

    X, truth = blobs
    labels = generate_base_clusterings(X, 10, random_state=0, generators="kmeans:1,genie:1,spectral:1")
    selection, found = auto_consensus(labels, method, random_state=0)
    assert selection.k == 4 and adjusted_rand_score(truth, found) > 0.95
