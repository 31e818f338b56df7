"""The per-partition pieces of the Dask path, combined in-process, against the local numeric core."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from lwec_tasks import Ensemble, ari, generate_base_clusterings, lwea, nmi
from lwec_tasks.core.eci import ensemble_uncertainty
from lwec_tasks.core.lwgp import normalised_cluster_graph
from lwec_tasks.core.pair_kernels import sparse_cluster_graph
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.stages import partitions as part
from lwec_tasks.stages.base_clusterings import assign_base_labels, base_plan, fit_base_model
from lwec_tasks.stages.planning import partition_count
from lwec_tasks.stages.reductions import (
    agreement_from_contingency,
    merge_microclusters,
    microcluster_graph_blocks,
    microcluster_index,
    microcluster_pair_tables,
    microclusters_of,
    pair_table,
    pair_tables,
    split_entropy_terms,
)
from lwec_tasks.stages.sums import Moments, add_tables, standard_scale
from lwec_tasks.stages.whole_table import lwea_on_microclusters

BOUNDS = [0, 130, 131, 400, 777, 1000]  # uneven partitions, one of a single row


@pytest.fixture(scope="module")
def ensemble():
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(1000, n_features=3, centers=4, cluster_std=2.0, random_state=0)
    return Ensemble(generate_base_clusterings(X, 6, random_state=1))


def chunks(ensemble):
    codes_t = np.ascontiguousarray(ensemble.codes.T)
    return [codes_t[:, a:b] for a, b in zip(BOUNDS[:-1], BOUNDS[1:])]


def test_uncertainty_from_summed_partition_tables_is_bit_identical(ensemble):
    ks = ensemble.n_clusters_per_column
    parts = [pair_tables(c, ks) for c in chunks(ensemble)]
    terms = split_entropy_terms(add_tables(*parts), ensemble.offsets, ensemble.cluster_sizes)
    np.testing.assert_array_equal(terms.sum(axis=0), ensemble_uncertainty(ensemble))


def test_contingency_tables_counted_over_the_microclusters_are_those_of_the_rows(ensemble):
    ks = ensemble.n_clusters_per_column
    merged = merge_microclusters(*[microclusters_of(c, ks)[0] for c in chunks(ensemble)])
    over_micro = microcluster_pair_tables(merged, ks)
    over_rows = pair_tables(np.ascontiguousarray(ensemble.codes.T), ks)
    for table, expected in zip(over_micro, over_rows):
        assert table.dtype == np.int64
        np.testing.assert_array_equal(table.toarray(), expected.toarray())
    terms = split_entropy_terms(over_micro, ensemble.offsets, ensemble.cluster_sizes)
    np.testing.assert_array_equal(terms.sum(axis=0), ensemble_uncertainty(ensemble))


def test_cluster_graph_over_the_merged_microclusters_equals_the_local_one(ensemble):
    eci = np.linspace(0.2, 1.0, ensemble.n_clusters_total)
    radices = ensemble.n_clusters_per_column
    merged = merge_microclusters(*[microclusters_of(c, radices)[0] for c in chunks(ensemble)])
    factors = np.sqrt(eci / ensemble.cluster_sizes)
    graph = sparse_cluster_graph(microcluster_graph_blocks(merged, ensemble.offsets, eci), ensemble.offsets, factors)
    local, _ = normalised_cluster_graph(ensemble, eci)
    np.testing.assert_allclose(graph.toarray(), local, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("k_b", [7, 5000])
def test_pair_table_dense_and_sparse_counting_agree(k_b):
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 5, 300), rng.integers(0, k_b, 300)
    weights = rng.random(300)
    expected = sp.coo_matrix((weights, (a, b)), shape=(5, k_b)).toarray()
    np.testing.assert_allclose(pair_table(a, b, 5, k_b, weights).toarray(), expected)
    assert pair_table(a, b, 5, k_b).sum() == 300


@pytest.mark.parametrize("by_keys", [True, False], ids=["integer-keys", "row-records"])
def test_microclusters_merge_in_the_local_order_and_index_every_row(ensemble, by_keys):
    radices = ensemble.n_clusters_per_column if by_keys else None
    located = [microclusters_of(c, radices) for c in chunks(ensemble)]
    merged = merge_microclusters(*[table for table, _ in located])
    assert (merged.keys is not None) == by_keys
    np.testing.assert_array_equal(merged.counts, ensemble.microcluster_sizes)
    np.testing.assert_array_equal(merged.rows, ensemble.codes[ensemble.microcluster_representative])
    index = np.concatenate([microcluster_index(own, merged) for own in located])
    np.testing.assert_array_equal(index, ensemble.microcluster_of)


def test_lwea_on_microclusters_with_row_mapping_equals_lwea():
    """Small θ makes cuts that split microclusters; the per-partition mapping must still give lwea's labels."""
    from sklearn.datasets import make_blobs
    from sklearn.preprocessing import StandardScaler

    from lwec_tasks.core.eci import ensemble_eci
    from lwec_tasks.core.lwea import microcluster_linkage

    X, _ = make_blobs(3000, n_features=4, centers=4, cluster_std=3, random_state=2)
    ensemble = Ensemble(generate_base_clusterings(StandardScaler().fit_transform(X), 6, random_state=3))
    codes = chunks_of(ensemble, [0, 1000, 1700, 3000])
    located = [microclusters_of(c) for c in codes]
    merged = merge_microclusters(*[table for table, _ in located])
    eci = ensemble_eci(ensemble, 0.05)
    offsets = np.array([0, 1000, 1700])
    for k in (4, 8, 12):
        leaf, split, kept, linkage = lwea_on_microclusters(merged, ensemble.offsets, eci, k, ensemble.n_objects)
        np.testing.assert_allclose(linkage, microcluster_linkage(ensemble, eci))  # the dendrogram figure's input
        index = [microcluster_index(own, merged) for own in located]
        counts = np.array([part.split_counts(i, split) for i in index]).reshape(len(codes), len(split))
        before = np.vstack([np.zeros((1, len(split)), np.int64), np.cumsum(counts, axis=0)[:-1]])
        raw = np.concatenate([part.lwea_raw_ids(i, leaf, split, kept, before[p], offsets[p], len(merged))
                              for p, i in enumerate(index)])
        _, first = np.unique(raw, return_index=True)
        numbering = {r: n for n, r in enumerate(raw[np.sort(first)])}
        labels = np.array([numbering[r] for r in raw])
        np.testing.assert_array_equal(labels, lwea(ensemble, k, theta=0.05))
        if k == 12:
            assert len(split), "no microcluster split at k = 12; the case no longer covers splitting"


def chunks_of(ensemble, bounds):
    codes_t = np.ascontiguousarray(ensemble.codes.T)
    return [codes_t[:, a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def test_the_cluster_map_sample_is_the_local_runs_and_its_labels_are_taken_at_its_positions():
    from lwec_tasks.core.seeds import base_seed
    from lwec_tasks.executors import InProcess
    from lwec_tasks.stages.consensus import PartitionedLabels, sample_labels
    from lwec_tasks.stages.generate import PICTURE_SAMPLE, picture_positions
    from lwec_tasks.stages.read import PartitionedTable

    n = 3000
    local = np.sort(np.random.default_rng(base_seed(7)).choice(n, size=PICTURE_SAMPLE, replace=False))
    np.testing.assert_array_equal(picture_positions(np.arange(n), 7), local)  # all rows gathered: the local rows
    gathered = np.sort(np.random.default_rng(1).choice(10 * n, size=n, replace=False))  # a sampled regime
    sample = picture_positions(gathered, 7)
    assert len(sample) == PICTURE_SAMPLE and np.all(np.diff(sample) > 0) and np.isin(sample, gathered).all()
    np.testing.assert_array_equal(picture_positions(gathered[:50], 7), gathered[:50])

    labels = np.random.default_rng(2).integers(0, 9, size=BOUNDS[-1]) * 3 + 1  # ids not 0..k−1
    parts = [labels[a:b] for a, b in zip(BOUNDS[:-1], BOUNDS[1:])]
    # what sample_labels reads: the session and the partitions' row counts
    table = PartitionedTable(session=InProcess(n_threads=1), plan=None, id_type=None, database_url="", specs=[],
                             rows=[], keys=[], counts=np.diff(BOUNDS), n_read=BOUNDS[-1], n_dropped=0)
    consensus = PartitionedLabels(labels=parts, sizes=np.bincount(labels), k=9)
    for positions in (np.array([0, 129, 130, 131, 999]), picture_positions(np.arange(BOUNDS[-1]), 3),
                      np.zeros(0, np.int64)):
        taken = sample_labels(table, consensus, positions)
        np.testing.assert_array_equal(taken, labels[positions])


def test_moments_combine_to_the_whole_columns_and_scale_like_standard_scaler():
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(1)
    X = np.column_stack([rng.normal(5, 3, 1000), np.full(1000, 2.5), rng.random(1000)])
    total = Moments.of(X[:0])
    for a, b in zip(BOUNDS[:-1], BOUNDS[1:]):
        total = total + Moments.of(X[a:b])
    scaler = StandardScaler().fit(X)
    np.testing.assert_allclose(total.mean, scaler.mean_, rtol=1e-13)
    np.testing.assert_allclose(standard_scale(total), scaler.scale_, rtol=1e-12)


def test_agreement_from_a_contingency_table_equals_nmi_and_ari():
    rng = np.random.default_rng(2)
    truth, labels = rng.integers(0, 4, 500), rng.integers(0, 3, 500)
    labels[:200] = truth[:200] % 3
    table = np.zeros((4, 3), dtype=np.int64)
    np.add.at(table, (truth, labels), 1)
    scores = agreement_from_contingency(table)
    assert scores["nmi"] == pytest.approx(nmi(truth, labels), rel=1e-12)
    assert scores["ari"] == pytest.approx(ari(truth, labels), rel=1e-12)
    assert agreement_from_contingency(np.array([[7]])) == {"nmi": 1.0, "ari": 1.0}


@pytest.mark.parametrize("generators", ["kmeans", "kmeans,genie,spectral,gmm,subspace,dbscan"])
@pytest.mark.parametrize("n_rows", [900, 3000])
def test_base_clusterings_from_partitions_equal_the_local_ones(monkeypatch, n_rows, generators):
    """Below and above the local large-N threshold (lowered here): same ks, same fitting rows, same labels."""
    from sklearn.datasets import make_blobs

    import lwec_tasks.core.base_clusterings as local_rule
    import lwec_tasks.core.generators as generator_rule

    monkeypatch.setattr(local_rule, "LARGE_N", 1000)
    monkeypatch.setattr(local_rule, "SAMPLE_SIZE", 400)
    monkeypatch.setattr(generator_rule, "FIT_SAMPLE", 700)
    monkeypatch.setattr(generator_rule, "LARGE_N_FIT_SAMPLE", 600)
    monkeypatch.setattr(generator_rule, "LARGE_N_PROTOTYPES", 50)
    X, _ = make_blobs(n_rows, n_features=3, centers=5, random_state=4)
    plan = base_plan(n_rows, 6, random_state=2, generators=generators)
    positions = plan.positions
    models = [fit_base_model(sample, k, seed, kind, plan.budget, rows=X[positions], positions=positions)
              for k, seed, sample, kind in zip(plan.ks, plan.seeds, plan.samples, plan.kinds)]
    codes = np.hstack([assign_base_labels(X[a:b], models) for a, b in [(0, 250), (250, 251), (251, n_rows)]])
    np.testing.assert_array_equal(codes.T, generate_base_clusterings(X, 6, random_state=2, generators=generators))
    assert (len(positions) < n_rows) == (n_rows > 1000)
    if generators != "kmeans" and n_rows > 1000:
        assert max(len(m.cluster_centers_) for m in models if hasattr(m, "centre_labels")) <= 50


def test_assignment_refuses_non_finite_rows_and_takes_finite_rows_whose_sum_overflows():
    from sklearn.cluster import KMeans

    from lwec_tasks.core.errors import LwecInputError

    X = np.array([[0.0, 1.0], [1.0, 0.0], [5.0, 5.0], [6.0, 5.0]])
    model = KMeans(2, n_init=1, random_state=0).fit(X)
    huge = np.array([[1e308, 0.0], [1e308, 0.0], [0.0, 1.0]])  # finite, but the sum overflows to inf
    np.testing.assert_array_equal(assign_base_labels(huge, [model])[0], model.predict(huge))
    for bad in (np.nan, np.inf):
        with pytest.raises(LwecInputError, match="NaN or ±inf"):
            assign_base_labels(np.vstack([X, [bad, 0.0]]), [model])


@settings(max_examples=40, deadline=None)
@given(n_rows=st.integers(2, 5000), n_clusterings=st.integers(1, 6), seed=st.integers(0, 2**31),
       large_n=st.integers(1, 200))
def test_the_fitting_positions_are_every_sampled_row_once_in_order(n_rows, n_clusterings, seed, large_n):
    import lwec_tasks.core.base_clusterings as local_rule

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(local_rule, "LARGE_N", large_n)
        patch.setattr(local_rule, "SAMPLE_SIZE", max(1, large_n // 2))
        plan = base_plan(n_rows, n_clusterings, random_state=seed)
    np.testing.assert_array_equal(plan.positions, np.unique(np.concatenate(plan.samples)))


def test_partition_counts(monkeypatch):
    assert partition_count(5_000, 4) == 1
    assert partition_count(20_000, 2) == 2
    assert partition_count(300_000, 2) == 4
    assert partition_count(10**9, 64) == 2000
    monkeypatch.setenv("LWEC_DASK_PARTITION_ROWS", "5000000")
    assert partition_count(10**9, 64) == 200
    monkeypatch.setenv("LWEC_DASK_PARTITION_ROWS", "many")
    from lwec_tasks.core.errors import LwecInputError

    with pytest.raises(LwecInputError, match="LWEC_DASK_PARTITION_ROWS"):
        partition_count(10**9, 64)


def test_dask_address_is_a_flow_parameter_outside_the_run_key():
    required = {"database_url": "sqlite:///x.db", "table": "t", "n_clusters": 3}
    on_dask = ConsensusRequest(**required, dask_address="tcp://10.0.0.5:8786")
    assert on_dask.run_key == ConsensusRequest(**required).run_key
    from lwec_tasks.core.errors import LwecInputError

    with pytest.raises(LwecInputError, match="dask_address must be a scheduler address"):
        ConsensusRequest(**required, dask_address="tcp://host 8786")


def test_lwec_run_has_a_dask_address_option():
    from lwec_tasks.cli import build_parser
    from lwec_tasks.cli.request_options import request_parameters

    args = build_parser().parse_args(["run", "--database-url", "sqlite:///x.db", "--table", "t", "-k", "3",
                                      "--dask-address", "tcp://10.0.0.5:8786"])
    assert request_parameters(args)["dask_address"] == "tcp://10.0.0.5:8786"


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_integer_keys_find_the_same_microclusters_as_row_comparison(data):
    """Keys order rows as lexicographic comparison does; where their product would overflow, rows are compared."""
    n_columns = data.draw(st.integers(1, 6))
    radices = np.array(data.draw(st.lists(st.integers(1, 2**20), min_size=n_columns, max_size=n_columns)))
    n = data.draw(st.integers(1, 200))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    codes_t = np.stack([rng.integers(0, min(r, 4), n) for r in radices]).astype(np.int32)
    cut = data.draw(st.integers(0, n))
    parts = [codes_t[:, :cut], codes_t[:, cut:]]
    keyed = [microclusters_of(c, radices) for c in parts]
    compared = [microclusters_of(c) for c in parts]
    by_keys = merge_microclusters(*[table for table, _ in keyed])
    by_rows = merge_microclusters(*[table for table, _ in compared])
    np.testing.assert_array_equal(by_keys.rows, by_rows.rows)
    np.testing.assert_array_equal(by_keys.counts, by_rows.counts)
    assert (by_keys.keys is None) == (np.prod(radices.astype(float)) >= 2.0**62)
    for own_keyed, own_compared, c in zip(keyed, compared, parts):
        index = microcluster_index(own_keyed, by_keys)
        np.testing.assert_array_equal(index, microcluster_index(own_compared, by_rows))
        np.testing.assert_array_equal(by_rows.rows[index], c.T)  # every row points at its own label row


def test_progress_logs_no_timing_for_work_the_in_process_executor_has_already_done():
    """In-process handles are finished before they are waited on: a rows-per-second figure would be noise."""
    import logging

    from lwec_tasks.executors import InProcess
    from lwec_tasks.executors.progress import Progress

    class Lines(logging.Handler):
        def __init__(self):
            super().__init__()
            self.messages = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    log = logging.getLogger("lwec-progress-test")
    log.setLevel(logging.INFO)
    lines = Lines()
    log.addHandler(lines)
    try:
        session = InProcess(n_threads=2)
        handles = session.map(np.sum, [np.ones(3), np.ones(4)], name="sum")
        Progress(log, "sums").wait(handles, rows=[3, 4])
        results = Progress(log, "sums").wait_results(handles, rows_of=int)
    finally:
        log.removeHandler(lines)
    assert results == [3.0, 4.0]
    assert lines.messages == []


@pytest.mark.parametrize("sampled", [False, True], ids=["all microclusters", "sampled microclusters"])
def test_lwgp_stage_is_the_library_lwgp_and_its_sums_are_every_rows_embedding_summed(tmp_path, monkeypatch, sampled):
    """Over partitions LWGP labels as the library does (k-means on the weighted microclusters; sampled above
    SAMPLE_THRESHOLD of them), and the embedding sums it makes from the microclusters are each cluster's sum of
    its rows' normalised embedding rows, of which the labelling model's centres are made."""
    import logging

    import lwec_tasks.core.lwgp as core_lwgp
    from helpers.pipeline import blobs_frame, read_stage
    from lwec_tasks import lwgp
    from lwec_tasks.stages import planning
    from lwec_tasks.stages.consensus import consensus_labels
    from lwec_tasks.stages.ensemble import reliability
    from lwec_tasks.stages.generate import base_clusterings
    from lwec_tasks.stages.model import labelling_model

    if sampled:
        monkeypatch.setattr(core_lwgp, "SAMPLE_THRESHOLD", 100)
        monkeypatch.setattr(core_lwgp, "SAMPLE_SIZE", 80)
    monkeypatch.setattr(planning, "MIN_PARTITION_ROWS", 300)
    monkeypatch.setenv(planning.PARTITION_ROWS_ENV, "700")
    log = logging.getLogger("test")
    table, *_ = read_stage(blobs_frame(n=3_000, centers=5), tmp_path)
    assert table.n_partitions > 1
    ensemble = base_clusterings(table, 8, 0, log)
    ensemble, found = reliability(table, ensemble, 0.4, log)
    eci = found.eci
    labels = consensus_labels(table, ensemble, eci, "lwgp", 5, 0.4, 0, log)
    assert ensemble.n_microclusters > 100 or not sampled
    codes = np.concatenate(table.session.gather(ensemble.codes), axis=1).T  # (N, M), each column's own labels
    written = np.concatenate(table.session.gather(labels.labels))
    np.testing.assert_array_equal(written, lwgp(codes, 5, theta=0.4, random_state=0))

    # every row embedded on its own: Σ_m U[its cluster] / Σ_m ECI[its cluster], scaled to unit length
    clusters = codes + ensemble.offsets[:-1]
    rows = labels.cluster_vectors[clusters].sum(axis=1) / eci[clusters].sum(axis=1)[:, None]
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    expected = np.array([rows[written == c].sum(axis=0) for c in range(5)])
    assert labels.embedding_sums.shape == (5, 5) and np.allclose(labels.embedding_sums, expected)
    placement, share = labelling_model(table, ensemble, labels, eci, "lwgp", 0.4, 5, 0, True, log)
    sizes = np.bincount(written, minlength=5)[placement.cluster_ids]
    assert np.allclose(placement.state["centres"], expected[placement.cluster_ids] / sizes[:, None])
    assert share == 1.0


def test_a_mixed_ensembles_labelling_model_places_its_training_rows_by_their_prototypes(monkeypatch, tmp_path):
    """Prototype models become centres mapped to their cluster's code: the labelling model, given the
    training rows' raw features, finds the codes the run assigned them, and the library's labels."""
    import logging

    from helpers.pipeline import blobs_frame, read_stage
    from lwec_tasks.stages import planning
    from lwec_tasks.stages.consensus import consensus_labels
    from lwec_tasks.stages.ensemble import reliability
    from lwec_tasks.stages.generate import base_clusterings
    from lwec_tasks.stages.model import labelling_model

    monkeypatch.setattr(planning, "MIN_PARTITION_ROWS", 300)
    monkeypatch.setenv(planning.PARTITION_ROWS_ENV, "700")
    log = logging.getLogger("test")
    mix = "kmeans,genie,spectral,gmm,subspace,dbscan"
    table, ids, _, raw = read_stage(blobs_frame(n=2_000, centers=4), tmp_path)
    assert table.n_partitions > 1
    ensemble = base_clusterings(table, 6, 0, log, generators=mix)
    X = (raw - table.mean) / table.scale
    expected = generate_base_clusterings(X, 6, random_state=0, generators=mix)
    codes = np.concatenate(table.session.gather(ensemble.codes), axis=1).T
    assert all(ari(codes[:, m], expected[:, m]) == 1.0 for m in range(6))
    ensemble, found = reliability(table, ensemble, 0.4, log)
    eci = found.eci
    labels = consensus_labels(table, ensemble, eci, "lwea", 4, 0.4, 0, log)
    placement, share = labelling_model(table, ensemble, labels, eci, "lwea", 0.4, 4, 0, True, log)
    global_codes = codes + ensemble.offsets[:-1]
    np.testing.assert_array_equal(placement.base_codes(raw), global_codes)
    written = np.concatenate(table.session.gather(labels.labels))
    assert share == 1.0 and ari(placement.predict(raw), written) == 1.0
