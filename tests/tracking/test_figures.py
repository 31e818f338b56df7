"""The run's figures: what they show is checked against independent computations."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import dendrogram, fcluster, linkage
from sklearn.decomposition import PCA

from lwec_tasks.tracking.figures import (
    _cut_height,
    cluster_map_figure,
    cluster_size_bars,
    dendrogram_figure,
    k_selection_figure,
    principal_components,
    top_of_linkage,
)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60), d=st.integers(2, 6))
def test_principal_components_match_scikit_learn(seed, n, d):
    X = np.random.default_rng(seed).normal(size=(n, d)) * np.arange(1, d + 1)
    points, explained = principal_components(X)
    reference = PCA(n_components=2).fit(X)
    np.testing.assert_allclose(explained, reference.explained_variance_ratio_, rtol=1e-6, atol=1e-9)
    # components are defined up to sign
    np.testing.assert_allclose(np.abs(points), np.abs(reference.transform(X)), rtol=1e-6, atol=1e-8)


def test_principal_components_of_one_feature_leave_the_second_axis_empty():
    points, explained = principal_components(np.arange(10.0)[:, None])
    assert explained[1] == 0 and np.all(points[:, 1] == 0) and explained[0] == pytest.approx(1.0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 40), data=st.data())
def test_the_marked_cut_height_separates_exactly_k_clusters(seed, n, data):
    Z = linkage(np.random.default_rng(seed).normal(size=(n, 3)), "average")
    k = data.draw(st.integers(2, n - 1))
    assert len(np.unique(fcluster(Z, t=_cut_height(Z, k), criterion="distance"))) == k


def test_cluster_sizes_are_drawn_by_the_ids_in_the_labels_table():
    labels = np.array([7, 7, 7, 2, 2, 11])
    axes = cluster_size_bars(np.bincount(labels), "lwea").axes[0]
    assert [t.get_text() for t in axes.get_xticklabels()] == ["2", "7", "11"]
    assert [bar.get_height() for bar in axes.patches] == [2, 3, 1]


def test_cluster_map_has_one_series_per_cluster_id():
    rng = np.random.default_rng(0)
    labels = np.repeat([4, 0, 9], 20)
    axes = cluster_map_figure(rng.normal(size=(60, 5)), labels, "lwgp").axes[0]
    assert sorted(int(c.get_label()) for c in axes.collections) == [0, 4, 9]
    assert sum(len(c.get_offsets()) for c in axes.collections) == 60


def test_dendrogram_marks_the_cut_and_shows_at_most_30_leaves():
    Z = linkage(np.random.default_rng(1).normal(size=(200, 2)), "average")
    axes = dendrogram_figure(Z, 5).axes[0]
    (cut,) = [line for line in axes.get_lines() if line.get_label().startswith("cut")]
    assert cut.get_ydata()[0] == pytest.approx(_cut_height(Z, 5))
    assert len(axes.get_xticklabels()) == 30
    dendrogram_figure(linkage(np.array([[0.0], [1.0]]), "average"), 2)  # one merge draws too


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 120), p=st.integers(2, 40))
def test_the_top_of_a_linkage_draws_like_scipys_truncated_dendrogram(seed, n, p):
    Z = linkage(np.random.default_rng(seed).normal(size=(n, 2)), "average")
    top, leaves = top_of_linkage(Z, p)
    assert top.shape == (min(p, n) - 1, 4) and len(leaves) == min(p, n)
    labels = [str(leaf) if leaf < n else f"({int(Z[leaf - n, 3])})" for leaf in leaves]
    truncated = dendrogram(Z, truncate_mode="lastp", p=min(p, n), no_plot=True)
    drawn = dendrogram(top, labels=labels, no_plot=True)
    assert drawn["ivl"] == truncated["ivl"]  # the same leaves (subtree sizes) in the same order
    assert sorted(map(max, drawn["dcoord"])) == pytest.approx(sorted(map(max, truncated["dcoord"])))


def test_the_dendrogram_reads_only_the_top_merges():
    n = 1_000_000  # a chain: every merge adds the next microcluster
    Z = np.column_stack([np.r_[0, np.arange(2, n)], np.r_[1, np.arange(n, 2 * n - 2)],
                         np.linspace(0.01, 1, n - 1), np.arange(2, n + 1)]).astype(np.float64)
    top, leaves = top_of_linkage(Z, 30)
    # the first merge kept joins microcluster n − 29 and the subtree of all merges below it
    assert top.shape == (29, 4) and leaves[:2] == [n - 29, 2 * n - 31]
    assert len(dendrogram_figure(Z, 3).axes[0].get_xticklabels()) == 30


def test_k_selection_marks_the_chosen_k():
    ks = np.arange(2, 12)
    axes = k_selection_figure(ks, np.sin(ks), 4, "a criterion", "lwea").axes[0]
    marks = [line for line in axes.get_lines() if line.get_label() == "chosen k = 4"]
    assert len(marks) == 1 and marks[0].get_xdata()[0] == 4
    np.testing.assert_array_equal(axes.get_lines()[0].get_ydata(), np.sin(ks))


DRAW_AFTER_PREPARING = """
import sys
import types

import numpy as np
from scipy.cluster.hierarchy import linkage

from lwec_tasks.tasks.track import prepare_tracking
from lwec_tasks.tracking.figures import consensus_figures, png_bytes

prepare_tracking()
imported = []
sys.addaudithook(lambda event, args: imported.append(args[0]) if event == "import" else None)
rng = np.random.default_rng(0)
rows = rng.standard_normal((60, 3))
selection = types.SimpleNamespace(ks=np.arange(2, 6), scores=rng.random(4), k=3, criterion="silhouette")
figures = consensus_figures("lwea", 0.4, rng.random(20), np.array([20, 25, 15]), rows, rng.integers(0, 3, 60), 3,
                            linkage(rows, "average"), selection)
drawn = [png_bytes(figure) for figure in figures.values()]
print(len(drawn), "figures drawn; imported:", sorted(set(imported)))
"""


def test_after_the_tracking_is_prepared_drawing_the_figures_imports_nothing():
    """The flow draws while another thread writes the labels; imports in two threads at once can meet
    half-initialised modules. Checked in a fresh interpreter, where nothing was imported by other tests."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", DRAW_AFTER_PREPARING], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "5 figures drawn; imported: []" in done.stdout, done.stdout
