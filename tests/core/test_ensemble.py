"""Accepted label-matrix forms, the encoding, and clear errors on bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lwec_tasks import Ensemble, LwecInputError, eci, lwea, lwgp

LABELS = np.array([[1, 10], [1, 10], [2, 10], [2, -4], [3, -4]])


@pytest.mark.parametrize(
    "form",
    [
        lambda a: a,
        lambda a: a.tolist(),
        lambda a: [tuple(row) for row in a.tolist()],
        lambda a: a.astype(float),
        lambda a: pd.DataFrame(a, columns=["kmeans_a", "kmeans_b"]),
        lambda a: a.astype(object),
    ],
    ids=["ndarray", "list", "tuples", "float", "dataframe", "object"],
)
def test_every_accepted_form_encodes_identically(form):
    reference = Ensemble(LABELS)
    ensemble = Ensemble(form(LABELS))
    assert np.array_equal(ensemble.codes, reference.codes)
    assert np.array_equal(eci(ensemble), eci(reference))


def test_encoding_attributes():
    ensemble = Ensemble(LABELS)
    assert ensemble.shape == (5, 2)
    assert ensemble.codes.tolist() == [[0, 1], [0, 1], [1, 1], [1, 0], [2, 0]]
    assert ensemble.offsets.tolist() == [0, 3, 5]
    assert ensemble.cluster_label.tolist() == [1, 2, 3, -4, 10]
    assert ensemble.cluster_sizes.tolist() == [2, 2, 1, 2, 3]
    assert ensemble.global_codes.tolist() == [[0, 4], [0, 4], [1, 4], [1, 3], [2, 3]]
    expected = np.zeros((5, 5))
    expected[np.arange(5)[:, None], ensemble.global_codes] = 1
    assert sp.issparse(ensemble.incidence)
    assert np.array_equal(ensemble.incidence.toarray(), expected)
    assert ensemble.n_microclusters == 4
    assert ensemble.microcluster_sizes.tolist() == [2, 1, 1, 1]
    assert ensemble.microcluster_of[0] == ensemble.microcluster_of[1]


@given(
    st.integers(2, 40).flatmap(
        lambda n: arrays(np.int64, (n, 3), elements=st.integers(-1000, 1000))
    )
)
def test_microclusters_group_exactly_the_identical_rows(labels):
    ensemble = Ensemble(labels)
    rows = [tuple(r) for r in labels.tolist()]
    assert ensemble.n_microclusters == len(set(rows))
    same_row = np.array([[a == b for b in rows] for a in rows])
    same_micro = ensemble.microcluster_of[:, None] == ensemble.microcluster_of[None, :]
    assert np.array_equal(same_row, same_micro)
    assert np.array_equal(
        ensemble.microcluster_codes[ensemble.microcluster_of], ensemble.global_codes
    )


def test_huge_label_values_fall_back_to_sorting():
    labels = np.array([[10**15, 0], [-(10**15), 0], [10**15, 1]])
    assert Ensemble(labels).codes.tolist() == [[1, 0], [0, 0], [1, 1]]


@pytest.mark.parametrize(
    "labels, message",
    [
        (np.empty((0, 3)), "empty"),
        (np.empty((4, 0)), "empty"),
        ([], "empty"),
        (np.array([[1, 2]]), "at least 2 objects"),
        (np.array([1, 2, 3]), "2-D"),
        ([1, 2, 3], "flat list"),
        ([[1, 2], [1]], "ragged: row 0 has 2 labels but row 1 has 1"),
        (np.array([[1.0, 2.0], [np.nan, 1.0]]), "'column 0' has 1 missing"),
        (np.array([[1, 2.5], [1, 1]]), "non-integer label 2.5"),
        ([[1, None], [2, 3]], "'column 1' has a missing value"),
        ([[1, "a"], [2, 3]], "non-integer label 'a'"),
        (np.array([[True, 1], [False, 2]], dtype=object), "non-integer label True"),
        (pd.DataFrame({"good": [1, 2, 3], "bad": [1.0, None, 2.0]}), "'bad' has 1 missing"),
        (pd.DataFrame({"good": [1, 2, 3], "text": ["x", "y", "z"]}), "'text' holds a non-integer"),
        ("labels", "must be an"),
        (np.array([[1e19, 0], [2e19, 1], [3e19, 0]]), "1e\\+19 at row 0, beyond the 64-bit"),
        (np.array([[2**63 + 5, 0], [1, 1]], dtype=np.uint64), "9223372036854775813 at row 0"),
        ([[10**19, 0], [1, 1]], "10000000000000000000 at row 0, beyond"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_message(labels, message):
    with pytest.raises(LwecInputError, match=message):
        Ensemble(labels)


@pytest.mark.parametrize("function", [lwea, lwgp])
@pytest.mark.parametrize(
    "k, message",
    [(1, ">= 2"), (0, ">= 2"), (2.5, "int or a sequence of ints"), ([3, 2.5], "must contain integers"), ([], "empty")],
)
def test_bad_n_clusters(function, k, message):
    with pytest.raises(LwecInputError, match=message):
        function(LABELS, k)


def test_k_above_number_of_microclusters_is_rejected_by_lwea():
    with pytest.raises(LwecInputError, match="larger than the number of microclusters \\(4\\)"):
        lwea(LABELS, 5)


def test_k_above_number_of_clusters_is_rejected_by_lwgp():
    labels = np.array([[0, 0], [0, 0], [1, 1], [1, 1], [1, 1]])
    with pytest.raises(LwecInputError, match="number of clusters in the ensemble \\(4\\)"):
        lwgp(labels, 5)
    with pytest.raises(LwecInputError, match="microclusters\\) \\(2\\)"):
        lwgp(labels, 3)


def test_estimators_accept_an_encoded_ensemble():
    from lwec_tasks import LWEA, LWGP

    ensemble = Ensemble(LABELS)
    assert np.array_equal(LWEA(3).fit(ensemble).labels_, lwea(LABELS, 3))
    assert np.array_equal(LWGP(3, random_state=0).fit(ensemble).labels_, lwgp(LABELS, 3, random_state=0))
