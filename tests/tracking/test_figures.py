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


def png_size(figure) -> tuple[int, int]:
    """(width, height) in pixels of the PNG the run logs for ``figure``."""
    import io

    from PIL import Image

    from lwec_tasks.tracking.figures import png_bytes

    return Image.open(io.BytesIO(png_bytes(figure))).size


def made_up_profiles(n_clusters: int, names: list[str], seed: int = 0):
    """Profiles as :func:`~lwec_tasks.core.profiles.cluster_profiles` lays them out, with made-up numbers."""
    import pandas as pd

    from lwec_tasks.core.cohesion import relative_cohesion

    rng = np.random.default_rng(seed)
    sizes = rng.integers(20, 400, n_clusters)
    frame = pd.DataFrame({"cluster": np.arange(n_clusters), "size": sizes, "share": sizes / sizes.sum(),
                          "mean_confidence": rng.random(n_clusters), "cohesion": np.linspace(0.2, 0.9, n_clusters)})
    frame["cohesion_relative"] = relative_cohesion(frame["cohesion"].to_numpy(), sizes)
    columns = {}
    for name in names:
        columns[f"{name}_mean"] = rng.normal(size=n_clusters)
        columns[f"{name}_z"] = rng.normal(size=n_clusters)
    return pd.concat([frame, pd.DataFrame(columns)], axis=1)


def test_the_profile_figure_is_readable_at_preview_size_and_names_the_features_it_shows():
    from lwec_tasks.core.cohesion import MIXED_BELOW
    from lwec_tasks.core.label_table import cluster_label_table
    from lwec_tasks.core.profiles import features_setting_clusters_apart, z_scores
    from lwec_tasks.tracking.figures import PROFILE_FEATURES, profile_heatmap

    names = [f"pixel_{j // 8}_{j % 8}" for j in range(64)]
    profiles = made_up_profiles(10, names)
    counts = pd_counts({(9, 3): 144, (3, 3): 172, (1, 0): 178})
    figure = profile_heatmap(profiles, names, cluster_label_table(counts, "target"))
    assert png_size(figure) == (960, 580)
    axes = figure.axes[0]
    chosen = features_setting_clusters_apart(z_scores(profiles, names), PROFILE_FEATURES)
    assert [t.get_text() for t in axes.get_xticklabels()] == [names[j] for j in chosen]
    assert "the 12 of 64 features that set clusters apart most" in axes.get_title()
    rows = [t.get_text() for t in axes.get_yticklabels()]
    assert len(rows) == 10 and rows[3].startswith("3  n=") and rows[3].endswith("3: 54%")
    flagged = profiles["cohesion_relative"] < MIXED_BELOW
    assert [("mixed?" in row) for row in rows] == flagged.tolist() and flagged.any() and not flagged.all()


def pd_counts(pairs: dict):
    """Row counts indexed by (label value, cluster id), as the run sums them."""
    import pandas as pd

    return pd.Series(pairs).rename_axis(["truth", "label"])


def test_the_profile_figure_of_a_mixed_table_shows_level_shares_by_name():
    from lwec_tasks.tracking.figures import profile_heatmap

    names = ["age", "colour=red", "colour=blue", "colour=NULL", "member=True"]
    figure = profile_heatmap(made_up_profiles(3, names), names)
    assert png_size(figure) == (960, 400)
    assert sorted(t.get_text() for t in figure.axes[0].get_xticklabels()) == sorted(names)
    assert "all 5 features" in figure.axes[0].get_title()


def test_many_clusters_and_label_values_are_cut_to_the_largest_and_said_so():
    import pandas as pd

    from lwec_tasks.core.label_table import cluster_label_table
    from lwec_tasks.tracking.figures import cluster_labels_figure, profile_heatmap

    rng = np.random.default_rng(2)
    clusters, values = rng.integers(0, 40, 5000), rng.integers(0, 25, 5000)
    table = cluster_label_table(pd.Series(values).groupby([values, clusters]).size(), "letter")
    figure = cluster_labels_figure(table, "letter")
    assert png_size(figure) == (960, 1220)
    axes = figure.axes[0]
    ticks = [t.get_text() for t in axes.get_xticklabels()]
    assert len(ticks) == 13 and ticks[-1] == "other" and len(axes.get_yticklabels()) == 30
    assert "the 30 largest of 40 clusters" in axes.get_title()
    assert "the 12 most frequent of 25 values" in axes.get_title()
    shown = np.array([int(t.get_text().split()[0]) for t in axes.get_yticklabels()])
    largest = table.sort_values("size", ascending=False, kind="stable")["cluster"].to_numpy()[:30]
    assert sorted(shown) == sorted(largest)
    profiles = made_up_profiles(40, ["a", "b"])
    assert png_size(profile_heatmap(profiles, ["a", "b"])) == (960, 1220)
    assert "the 30 largest of 40 clusters" in profile_heatmap(profiles, ["a", "b"]).axes[0].get_title()


def test_the_cluster_label_figure_writes_each_count_and_each_majority():
    from lwec_tasks.core.label_table import cluster_label_table
    from lwec_tasks.tracking.figures import FLAG_COLOUR, cluster_labels_figure

    table = cluster_label_table(pd_counts({(3, 0): 172, (9, 0): 144, (1, 1): 178, (7, 1): 2}), "target")
    figure = cluster_labels_figure(table, "target")
    assert png_size(figure) == (960, 400)
    axes, right = figure.axes
    assert [t.get_text() for t in axes.get_xticklabels()] == ["1", "3", "7", "9"]
    assert sorted(t.get_text() for t in axes.texts) == sorted(["172", "144", "178", "2"])
    majority = right.get_yticklabels()
    assert [t.get_text() for t in majority] == ["3: 54%", "1: 99%"]
    assert majority[0].get_color() == FLAG_COLOUR and majority[1].get_color() != FLAG_COLOUR


def _texts_outside(figure) -> list[str]:
    """The drawn texts of ``figure`` whose extent leaves its canvas (by more than a pixel)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    width, height = canvas.get_width_height()
    undrawn = set()  # labels of ticks outside the view, which are not drawn
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis):
            low, high = sorted(axis.get_view_interval())
            slack = 1e-9 * max(1.0, abs(high))
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not low - slack <= tick.get_loc() <= high + slack:
                    undrawn.update((id(tick.label1), id(tick.label2)))
    outside = []
    for text in figure.findobj(Text):
        if not text.get_visible() or not text.get_text() or id(text) in undrawn:
            continue
        box = text.get_window_extent(renderer)
        if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1:
            outside.append(f"{text.get_text()!r} at x {box.x0:.0f}..{box.x1:.0f}, y {box.y0:.0f}..{box.y1:.0f} "
                           f"of {width} × {height}")
    return outside


def test_the_figures_keep_their_longest_texts_on_the_canvas():
    """Most margins are set without measuring the text: texts as long as runs make them (four-digit ids, 30
    clusters, six-digit microcluster numbers and merge heights just below 1, ten million rows, a criterion of three
    lines) all stay drawn."""
    from lwec_tasks.core.coassociation_cdf import coassociation_distribution
    from lwec_tasks.tracking.figures import (
        confidence_histogram_figure,
        consensus_cdf_figure,
        eci_figure,
        k_curve_figure,
    )

    rng = np.random.default_rng(3)
    ids = 1000 + np.arange(30) * 300  # four-digit ids, as stable ids reach after many runs
    sizes = np.zeros(ids.max() + 1, dtype=np.int64)
    sizes[ids] = rng.integers(100_000, 900_000, len(ids))
    labels = rng.choice(ids, 2000)
    # a chain over 200,000 microclusters: its top leaves are six-digit numbers beside one "(199971)" subtree
    n = 200_000
    Z = np.column_stack([np.r_[0, n + np.arange(n - 2)], np.arange(1, n), np.arange(1, n) / n, np.arange(2, n + 1)])
    criterion = "NMI(LWGP cut, LWEA cut at k*=15); k* by mean LWCA modularity (γ=0.6) + 0.15·NMI(LWEA, LWGP) " * 2
    ks = np.arange(2, 51)
    codes = rng.integers(0, 20, size=(500, 10))
    figures = {
        "eci": eci_figure(rng.random(5000), 0.4),
        "sizes": cluster_size_bars(sizes, "lwgp"),
        "map": cluster_map_figure(rng.normal(size=(2000, 6)) * 100, labels, "lwgp"),
        "dendrogram": dendrogram_figure(Z, 25),
        "k selection": k_selection_figure(ks, rng.random(len(ks)), 15, criterion, "lwea"),
        "k curve": k_curve_figure(ks, rng.random(len(ks)), 20, 15, criterion, "lwgp", 5000),
        "confidence": confidence_histogram_figure(rng.integers(0, 10_000_000, 20), "lwgp"),
        "cdf": consensus_cdf_figure(coassociation_distribution(codes, rng.integers(1, 20_000, 500))),
    }
    assert {name: _texts_outside(figure) for name, figure in figures.items()} == {name: [] for name in figures}
