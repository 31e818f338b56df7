"""Renumbering a new clustering to agree with an earlier one: structure kept, agreement optimal."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.renumber import Renumbering, align_to_previous, shared_positions
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.core.renumber import fresh_ids, ids_per_cluster, match_clusters


@st.composite
def two_runs(draw, max_objects=12, max_new=4, max_previous=4):
    """(labels, ids, previous_ids, previous_labels) over overlapping id ranges, in shuffled order."""
    universe = draw(st.integers(1, max_objects))
    in_new = draw(st.lists(st.booleans(), min_size=universe, max_size=universe))
    in_previous = draw(st.lists(st.booleans(), min_size=universe, max_size=universe))
    ids = np.array([i for i in range(universe) if in_new[i]], dtype=np.int64) * 3 + 100
    previous_ids = np.array([i for i in range(universe) if in_previous[i]], dtype=np.int64) * 3 + 100
    new_names = draw(st.lists(st.integers(0, 9), min_size=1, max_size=max_new, unique=True))
    previous_names = draw(st.lists(st.integers(0, 9), min_size=1, max_size=max_previous, unique=True))
    labels = np.array(draw(st.lists(st.sampled_from(new_names), min_size=len(ids), max_size=len(ids))),
                      dtype=np.int64)
    previous_labels = np.array(
        draw(st.lists(st.sampled_from(previous_names), min_size=len(previous_ids), max_size=len(previous_ids))),
        dtype=np.int64)
    order = np.array(draw(st.permutations(range(len(ids)))), dtype=np.int64)
    previous_order = np.array(draw(st.permutations(range(len(previous_ids)))), dtype=np.int64)
    return labels[order], ids[order], previous_ids[previous_order], previous_labels[previous_order]


def previous_of(ids, previous_ids, previous_labels):
    """Earlier label of each id (None when the earlier run lacks it), by a plain dict."""
    lookup = dict(zip(previous_ids.tolist(), previous_labels.tolist()))
    return [lookup.get(i) for i in ids.tolist()]


def best_agreement_by_brute_force(labels, ids, previous_ids, previous_labels):
    """Most shared objects keeping their label over every injective renaming of the new clusters."""
    earlier = previous_of(ids, previous_ids, previous_labels)
    clusters = sorted(set(labels.tolist()))
    targets = sorted(set(previous_labels.tolist())) + [-1 - j for j in range(len(clusters))]  # + unused ids
    best = 0
    for image in itertools.permutations(targets, len(clusters)):
        rename = dict(zip(clusters, image))
        best = max(best, sum(rename[c] == e for c, e in zip(labels.tolist(), earlier) if e is not None))
    return best


def same_partition(a, b):
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@given(two_runs())
def test_renumbering_is_an_injection_that_keeps_the_partition(runs):
    labels, ids, previous_ids, previous_labels = runs
    result = align_to_previous(labels, ids, previous_ids, previous_labels)
    assert isinstance(result, Renumbering)
    assert result.labels.dtype == np.int64 and result.labels.shape == labels.shape
    assert set(result.mapping) == set(labels.tolist())
    assert len(set(result.mapping.values())) == len(result.mapping)
    assert result.labels.tolist() == [result.mapping[c] for c in labels.tolist()]
    assert same_partition(labels, result.labels)


@given(two_runs())
def test_agreement_is_optimal_against_brute_force(runs):
    labels, ids, previous_ids, previous_labels = runs
    result = align_to_previous(labels, ids, previous_ids, previous_labels)
    earlier = previous_of(ids, previous_ids, previous_labels)
    shared = [(r, e) for r, e in zip(result.labels.tolist(), earlier) if e is not None]
    assert result.n_shared == len(shared)
    if not shared:
        assert math.isnan(result.agreement)
        return
    agreeing = sum(r == e for r, e in shared)
    assert result.agreement == pytest.approx(agreeing / len(shared))
    assert agreeing == best_agreement_by_brute_force(labels, ids, previous_ids, previous_labels)


@given(two_runs())
def test_unmatched_clusters_get_the_smallest_ids_the_earlier_run_does_not_use(runs):
    labels, ids, previous_ids, previous_labels = runs
    result = align_to_previous(labels, ids, previous_ids, previous_labels)
    if result.n_shared == 0:
        return
    used = set(previous_labels.tolist())
    matched = {c: s for c, s in result.mapping.items() if s in used}
    unmatched = sorted(c for c in result.mapping if c not in matched)
    assert len(matched) == result.n_matched
    expected = [i for i in range(len(used) + len(unmatched)) if i not in used][:len(unmatched)]
    assert [result.mapping[c] for c in unmatched] == expected
    # a matched pair really overlaps
    earlier = previous_of(ids, previous_ids, previous_labels)
    for cluster, stable in matched.items():
        assert any(c == cluster and e == stable for c, e in zip(labels.tolist(), earlier))


@given(two_runs())
def test_result_does_not_depend_on_row_order(runs):
    labels, ids, previous_ids, previous_labels = runs
    result = align_to_previous(labels, ids, previous_ids, previous_labels)
    again = align_to_previous(labels[::-1], ids[::-1], previous_ids[::-1], previous_labels[::-1])
    assert again.mapping == result.mapping
    assert again.labels[::-1].tolist() == result.labels.tolist()


@given(st.lists(st.integers(0, 5), min_size=1, max_size=30), st.permutations(range(6)), st.randoms())
def test_a_relabelled_copy_gets_the_earlier_labels_back(previous, permutation, rnd):
    previous_labels = np.array(previous, dtype=np.int64)
    previous_ids = np.arange(len(previous)) * 7
    labels = np.array([permutation[v] + 10 for v in previous], dtype=np.int64)
    order = list(range(len(previous)))
    rnd.shuffle(order)
    result = align_to_previous(labels[order], previous_ids[order], previous_ids, previous_labels)
    assert result.agreement == 1.0
    assert result.n_shared == len(previous)
    assert result.n_matched == len(set(previous))
    assert result.labels.tolist() == previous_labels[order].tolist()


def test_string_ids_and_ids_in_only_one_run():
    result = align_to_previous(
        labels=[4, 4, 8, 8, 6],
        ids=np.array(["a", "b", "c", "d", "new"], dtype=object),
        previous_ids=np.array(["gone", "d", "c", "b", "a"], dtype=object),
        previous_labels=[0, 2, 2, 1, 1],
    )
    assert result.mapping == {4: 1, 8: 2, 6: 3}  # 6 shares nothing: 0 is used (by "gone"), so 3
    assert result.labels.tolist() == [1, 1, 2, 2, 3]
    assert (result.agreement, result.n_shared, result.n_matched) == (1.0, 4, 2)


def test_partial_agreement_picks_the_larger_overlap():
    # new cluster 0 = {1,2,3}, earlier cluster 5 = {1,2}, earlier 6 = {3,4}; new 1 = {4}
    result = align_to_previous([0, 0, 0, 1], [1, 2, 3, 4], [1, 2, 3, 4], [5, 5, 6, 6])
    assert result.mapping == {0: 5, 1: 6}
    assert result.agreement == 0.75


def test_no_shared_objects_keeps_the_new_ids_with_nan_agreement():
    result = align_to_previous([3, 1, 3], [1, 2, 3], [10, 11], [0, 1])
    assert result.mapping == {1: 1, 3: 3}
    assert result.labels.tolist() == [3, 1, 3]
    assert math.isnan(result.agreement) and result.n_shared == 0 and result.n_matched == 0
    empty = align_to_previous([2, 2], [1, 2], np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    assert empty.mapping == {2: 2} and math.isnan(empty.agreement)
    nothing = align_to_previous([], [], [1], [0])
    assert nothing.mapping == {} and nothing.labels.shape == (0,)


def test_more_new_clusters_than_earlier_ones():
    result = align_to_previous([0, 1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4], [7, 7, 7, 2])
    assert result.mapping[3] == 2
    assert sorted(result.mapping.values()) == [0, 1, 2, 7]  # 7 to one of 0..2, fresh 0 and 1 to the others
    assert result.agreement == 0.5


def test_large_runs_are_matched_by_sorting():
    rng = np.random.default_rng(0)
    n = 1_000_000
    previous_ids = rng.permutation(n).astype(np.int64)
    previous_labels = rng.integers(0, 20, n)
    permutation = rng.permutation(20)
    ids = rng.permutation(np.arange(n // 2, n + n // 2))
    lookup = np.empty(n + n // 2, dtype=np.int64)
    lookup[previous_ids] = permutation[previous_labels]
    lookup[n:] = rng.integers(0, 20, n // 2)
    result = align_to_previous(lookup[ids], ids, previous_ids, previous_labels)
    assert result.n_shared == n // 2
    assert result.agreement == 1.0


def test_helpers():
    assert fresh_ids(np.array([0, 2, 5]), 4).tolist() == [1, 3, 4, 6]
    i, j = shared_positions(np.array([5, 1, 9]), np.array([9, 5, 7]))
    assert i.tolist() == [0, 2] and j.tolist() == [1, 0]


@pytest.mark.parametrize("args, message", [
    (([0, 1], [1, 1], [1], [0]), "ids must be distinct"),
    (([0, 1], [1, 2], [3, 3], [0, 0]), "previous_ids must be distinct"),
    (([0, 1], [1], [1], [0]), "ids has shape"),
    (([0.5, 1], [1, 2], [1], [0]), "labels must hold integer"),
    (([0, 1], [1, 2], np.array(["1"], dtype=object), [0]), "different kinds"),
    (([0, 1], np.array([1, "a"], dtype=object), [1], [0]), "mixes id kinds"),
])
def test_bad_input_is_named(args, message):
    with pytest.raises(LwecInputError, match=message):
        align_to_previous(*args)


@given(two_runs(), st.integers(1, 4))
def test_matching_overlaps_summed_over_parts_gives_the_same_renaming(runs, n_parts):
    """What a caller holding the objects in parts does: count the overlap per part, sum, match."""
    labels, ids, previous_ids, previous_labels = runs
    expected = align_to_previous(labels, ids, previous_ids, previous_labels)
    new_ids, used = np.unique(labels), np.unique(previous_labels)
    earlier = dict(zip(previous_ids.tolist(), previous_labels.tolist()))
    overlap = np.zeros((len(new_ids), len(used)), dtype=np.int64)
    for chunk in np.array_split(np.arange(len(ids)), n_parts):
        for i in chunk:
            if int(ids[i]) in earlier:
                overlap[np.searchsorted(new_ids, labels[i]), np.searchsorted(used, earlier[int(ids[i])])] += 1
    matching = match_clusters(overlap, new_ids, used)
    assert dict(zip(new_ids.tolist(), matching.ids.tolist())) == expected.mapping
    assert matching.n_shared == expected.n_shared and matching.n_matched == expected.n_matched
    assert (math.isnan(matching.agreement) and math.isnan(expected.agreement)) or matching.agreement == \
        expected.agreement


def test_match_clusters_refuses_a_table_of_the_wrong_shape():
    with pytest.raises(LwecInputError, match="overlap has shape"):
        match_clusters(np.zeros((2, 3)), [0, 1], [0, 1])


@settings(max_examples=50, deadline=None)
@given(k=st.integers(1, 8), data=st.data())
def test_ids_per_cluster_gives_empty_clusters_unused_ids(k, data):
    present = data.draw(st.lists(st.integers(0, k - 1), unique=True))
    targets = data.draw(st.lists(st.integers(0, 20), min_size=len(present), max_size=len(present), unique=True))
    ids = ids_per_cluster(dict(zip(present, targets)), k)
    assert len(set(ids.tolist())) == k and (ids >= 0).all()
    for cluster, target in zip(present, targets):
        assert ids[cluster] == target
