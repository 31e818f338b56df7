"""Figures logged with a consensus run (matplotlib ``Figure`` objects, no pyplot state).

Importing this module does not import matplotlib (each figure does, on first use): a Dask run's flow process names
:func:`consensus_pngs` for a worker to draw, and never loads it.
"""

from __future__ import annotations

import io
import textwrap
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Largest number of leaves drawn in the top of the LWEA dendrogram.
DENDROGRAM_LEAVES = 30


def consensus_figures(method: str, theta: float, eci: np.ndarray, sizes: np.ndarray, sample_rows: np.ndarray,
                      sample_labels: np.ndarray, k: int, linkage: np.ndarray | None = None,
                      selection=None, evidence: dict | None = None) -> dict[str, Figure]:
    """Artifact name → Figure for one consensus run, local or on Dask.

    ``eci`` (n_c,) per base cluster; ``sizes`` (max id + 1,) objects per written id;
    ``sample_rows`` (S, d) sampled standardised rows and ``sample_labels`` (S,) their
    written ids; ``linkage`` LWEA's dendrogram over microclusters (None for LWGP),
    cut into ``k``; ``selection`` the automatic choice of k (ks, scores, k,
    criterion), None when k was given; ``evidence`` the fields of the run's
    :class:`~lwec_tasks.stages.evidence.EvidenceSummary` as a dict (cluster profiles, the confidences'
    histogram, the co-association's distribution, for a given k the criterion over k, the cluster × label table
    of a run given a label column), None for none.
    """
    figures = {
        "eci_distribution.png": eci_figure(eci, theta),
        "cluster_sizes.png": cluster_size_bars(sizes, method),
        "cluster_map.png": cluster_map_figure(sample_rows, sample_labels, method),
    }
    if linkage is not None and len(linkage):
        figures["dendrogram.png"] = dendrogram_figure(linkage, k)
    if selection is not None:
        figures["k_selection.png"] = k_selection_figure(selection.ks, selection.scores, selection.k,
                                                        selection.criterion, method)
    if evidence is not None:
        figures["row_confidence.png"] = confidence_histogram_figure(evidence["histogram"], method)
        label_table = evidence.get("label_table")
        if evidence["feature_columns"] and len(evidence["profiles"]):
            figures["cluster_profiles.png"] = profile_heatmap(evidence["profiles"], evidence["feature_columns"],
                                                              label_table)
        if label_table is not None and len(label_table):
            figures["cluster_labels.png"] = cluster_labels_figure(label_table, evidence["label_column"])
        if evidence["coassociation"] is not None:
            figures["consensus_cdf.png"] = consensus_cdf_figure(evidence["coassociation"])
        curve = evidence.get("k_curve")
        if curve is not None and selection is None:
            figures["k_curve.png"] = k_curve_figure(curve.ks, curve.scores, k, curve.k, curve.criterion, method,
                                                    evidence["k_curve_rows"])
    return figures


def prepare_figures() -> None:
    """Import what :func:`png_bytes` draws with (matplotlib's Agg renderer, Pillow's image formats, which it
    loads on its first save), so that the first figures of a process are drawn as quickly as the next."""
    from matplotlib.backends import backend_agg  # noqa: F401 - what Figure.savefig draws with
    from matplotlib.figure import Figure  # noqa: F401 - what every figure is made of
    from PIL import Image

    Image.preinit()


def consensus_pngs(*arguments) -> dict[str, bytes]:
    """Artifact name → PNG bytes of the figures :func:`consensus_figures` draws from ``arguments``."""
    return {name: png_bytes(figure) for name, figure in consensus_figures(*arguments).items()}


def png_bytes(figure: Figure) -> bytes:
    """``figure`` drawn as PNG (matplotlib's 100 dpi, as MLflow's ``log_figure`` saves it), at zlib's fastest
    level: about a tenth larger and a tenth of the drawing time less than the default level 6."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
    return buffer.getvalue()


def new_figure(**options) -> Figure:
    """A matplotlib ``Figure(**options)`` (matplotlib imported here, not with this module)."""
    from matplotlib.figure import Figure

    return Figure(**options)


def fixed_figure(width: float, height: float, left: float = 0.85, right: float = 0.25, bottom: float = 0.65,
                 top: float = 0.45) -> Figure:
    """A ``width`` × ``height`` inch figure whose axes leave margins of the given inches for the text around them.

    For the figures whose text is known in advance (one-line labels, titles of counted lines, short tick
    labels). Measuring the text instead (matplotlib's constrained or tight layout) takes as long as drawing the
    figure again: about 40 % of a run's figure time. Figures with labels of any length (the profiles, the
    cluster × label table, the dendrogram's heights) keep constrained layout.
    """
    figure = new_figure(figsize=(width, height))
    figure.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height,
                           top=1 - top / height)
    return figure


def _title_inches(lines: int) -> float:
    """Top margin for a title of ``lines`` lines at 10–12 pt."""
    return 0.2 + 0.2 * lines


def eci_figure(eci: np.ndarray, theta: float) -> Figure:
    """Histogram of the ECI of every base cluster, shape (n_c,)."""
    figure = fixed_figure(6, 4)
    axes = figure.add_subplot()
    axes.hist(eci, bins=min(30, max(5, len(eci) // 3)), range=(0.0, 1.0), color="#4C72B0", edgecolor="white")
    axes.axvline(float(np.mean(eci)), color="#C44E52", linestyle="--", label=f"mean {np.mean(eci):.3f}")
    axes.set_xlabel("ensemble-driven cluster index (ECI)")
    axes.set_ylabel("number of base clusters")
    axes.set_title(f"ECI of {len(eci)} base clusters (θ = {theta:g})")
    axes.legend()
    return figure


def cluster_size_bars(sizes: np.ndarray, method: str) -> Figure:
    """Bar chart of cluster sizes; ``sizes[i]`` (shape (max id + 1,)) counts the objects of id i.

    The x axis shows the ids the labels table holds; ids without objects are left out.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    ids = np.flatnonzero(sizes)
    rotated = len(ids) > 20
    figure = fixed_figure(max(6.0, 0.25 * len(ids)), 4, bottom=0.65 + (0.08 * len(str(ids.max())) if rotated else 0))
    axes = figure.add_subplot()
    positions = np.arange(len(ids))
    axes.bar(positions, sizes[ids], color="#55A868")
    axes.set_xticks(positions, [str(i) for i in ids], rotation=90 if rotated else 0)
    axes.set_xlabel("consensus cluster id (the labels table's label)")
    axes.set_ylabel("objects")
    axes.set_title(f"{method.upper()}: {len(ids)} clusters, {int(sizes.sum())} objects")
    return figure


def principal_components(X: np.ndarray, n_components: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Project the rows of ``X`` (n, d) on their leading principal components.

    Returns ``(points (n, n_components), explained (n_components,))``, the share of
    variance each component explains; components beyond d are zero.
    """
    centred = np.asarray(X, dtype=np.float64) - np.mean(X, axis=0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    points = np.zeros((len(centred), n_components))
    used = min(n_components, vt.shape[0])
    points[:, :used] = centred @ vt[:used].T
    variance = singular**2
    explained = np.zeros(n_components)
    explained[:used] = variance[:used] / max(variance.sum(), np.finfo(float).tiny)
    return points, explained


#: Most clusters named in the cluster map's legend, in two columns above half as many (one column of 30 was taller
#: than the figure).
LEGEND_CLUSTERS = 30


def cluster_map_figure(X: np.ndarray, labels: np.ndarray, method: str) -> Figure:
    """Scatter of a sample of rows on their first two principal components, coloured by cluster id.

    ``X`` (n, d) is the sample of standardised features and ``labels`` (n,) its consensus ids.
    """
    points, explained = principal_components(X)
    labels = np.asarray(labels, dtype=np.int64)
    ids = np.unique(labels)
    legend_columns = 0 if len(ids) > LEGEND_CLUSTERS else 1 if len(ids) <= LEGEND_CLUSTERS // 2 else 2
    figure = fixed_figure(7, 5.5, right=(0.25, 1.15, 1.9)[legend_columns])
    axes = figure.add_subplot()
    colours = _cluster_colours(len(ids))
    for colour, cluster in zip(colours, ids):
        members = labels == cluster
        axes.scatter(points[members, 0], points[members, 1], s=6, color=colour, label=str(cluster), alpha=0.7,
                     linewidths=0)
    axes.set_xlabel(f"PC 1 ({explained[0]:.0%} of variance)")
    axes.set_ylabel(f"PC 2 ({explained[1]:.0%} of variance)")
    axes.set_title(f"{method.upper()} clusters on {len(labels)} sampled rows (PCA of the features)")
    if legend_columns:
        axes.legend(title="cluster id", markerscale=2.5, fontsize="small", loc="center left",
                    bbox_to_anchor=(1.01, 0.5), ncols=legend_columns)
    return figure


def _cluster_colours(n: int) -> list:
    from matplotlib import colormaps

    palette = colormaps["tab20" if n > 10 else "tab10"]
    return [palette(i % palette.N) for i in range(n)]


def dendrogram_figure(linkage: np.ndarray, k: int) -> Figure:
    """The top of LWEA's dendrogram (scipy linkage over microclusters, (Ñ − 1, 4)) with the cut into k marked.

    At most :data:`DENDROGRAM_LEAVES` leaves are drawn; a leaf labelled "(n)" stands for a subtree of n
    microclusters, any other leaf for the microcluster of that number. Only the top merges are read
    (:func:`top_of_linkage`), so the cost does not grow with Ñ.
    """
    from scipy.cluster.hierarchy import dendrogram

    linkage = np.asarray(linkage, dtype=np.float64)
    n_leaves = len(linkage) + 1
    top, leaves = top_of_linkage(linkage, DENDROGRAM_LEAVES)
    labels = [str(leaf) if leaf < n_leaves else f"({int(linkage[leaf - n_leaves, 3])})" for leaf in leaves]
    # constrained layout: the heights' tick labels grow with the digits the top merges need (0.999850 …)
    figure = new_figure(figsize=(8, 4.5), layout="constrained")
    axes = figure.add_subplot()
    dendrogram(top, ax=axes, labels=labels, color_threshold=_cut_height(linkage, k),
               above_threshold_color="#888888", leaf_rotation=90)
    axes.axhline(_cut_height(linkage, k), color="#C44E52", linestyle="--", label=f"cut into k = {k}")
    # Upper merges of 1 − LWCA often all sit just below 1: show the drawn merges' range, not 0..1.
    drawn = top[:, 2]
    if len(drawn):
        low, high = float(drawn.min()), float(max(drawn.max(), _cut_height(linkage, k)))
        margin = max(high - low, 1e-3) * 0.15
        axes.set_ylim(max(0.0, low - margin), high + margin)
    axes.set_ylabel("1 − LWCA (average link)")
    axes.set_xlabel("microclusters (subtree sizes in parentheses)")
    axes.set_title(f"Top of the LWEA dendrogram over {n_leaves} microclusters")
    axes.legend(loc="upper right")
    return figure


def top_of_linkage(linkage: np.ndarray, p: int) -> tuple[np.ndarray, list[int]]:
    """The last ``p − 1`` merges of a scipy ``linkage`` ((n − 1, 4), n leaves) as a linkage of their own.

    Returns ``(top, leaves)``: ``top`` ((q − 1, 4), q = min(p, n)) with the heights kept and sizes counting
    its own q leaves, and
    ``leaves`` (q,) the node of ``linkage`` each of its leaves stands for (< n: an original leaf; ≥ n:
    the subtree that merge ``node − n`` formed). Reads only the top rows: cost O(p), whatever n.
    """
    n = len(linkage) + 1
    first = n - min(p, n)  # row of the first merge kept
    top = np.array(linkage[first:], dtype=np.float64)
    leaves: list[int] = []
    index: dict[int, int] = {}
    for row in top:
        for column in (0, 1):
            node = int(row[column])
            if node < n + first and node not in index:
                index[node] = len(leaves)
                leaves.append(node)
    q = len(leaves)
    for row in top:
        for column in (0, 1):
            node = int(row[column])
            row[column] = index[node] if node < n + first else q + node - (n + first)
        # sizes count the leaves drawn (scipy checks them), not the microclusters below
        row[3] = sum(1 if child < q else top[int(child) - q, 3] for child in row[:2])
    return top, leaves


def _cut_height(linkage: np.ndarray, k: int) -> float:
    """A height between the highest merge kept and the lowest merge undone by a cut into k clusters."""
    heights = linkage[:, 2]
    if k <= 1:
        return float(heights[-1]) * 1.02
    if k > len(heights):
        return float(heights[0]) / 2
    return float((heights[-k] + heights[-k + 1]) / 2)


def k_selection_figure(ks: np.ndarray, scores: np.ndarray, k: int, criterion: str, method: str) -> Figure:
    """The automatic-k criterion against k, shapes (C,), with the chosen k marked."""
    title = f"{method.upper()}: automatic choice of k\n" + textwrap.fill(criterion, 70)
    figure = fixed_figure(6, 4, top=_title_inches(title.count("\n") + 1))
    axes = figure.add_subplot()
    axes.plot(ks, scores, marker="o", markersize=3, color="#4C72B0")
    axes.axvline(k, color="#C44E52", linestyle="--", label=f"chosen k = {k}")
    axes.set_xlabel("number of clusters k")
    axes.set_ylabel("score (higher is better)")
    axes.set_title(title, fontsize="medium")
    axes.legend()
    return figure


def k_curve_figure(ks: np.ndarray, scores: np.ndarray, k: int, best: int, criterion: str, method: str,
                   rows: int) -> Figure:
    """The automatic-k criterion against k, shapes (C,), for a run whose ``k`` was given (marked), with the k
    the criterion is highest at (``best``) on the ``rows`` it was computed on."""
    title = f"{method.upper()}: the k curve on a seeded sample of {rows:,} rows\n" + textwrap.fill(criterion, 70)
    figure = fixed_figure(6, 4, top=_title_inches(title.count("\n") + 1))
    axes = figure.add_subplot()
    axes.plot(ks, scores, marker="o", markersize=3, color="#4C72B0")
    axes.axvline(k, color="#C44E52", linestyle="--", label=f"given k = {k}")
    if best != k:
        axes.axvline(best, color="#55A868", linestyle=":", label=f"criterion's best k = {best}")
    axes.set_xlabel("number of clusters k")
    axes.set_ylabel("score (higher is better)")
    axes.set_title(title, fontsize="medium")
    axes.legend()
    return figure


#: Features drawn in the cluster profile heatmap: those that set the clusters apart most
#: (:func:`~lwec_tasks.core.profiles.features_setting_clusters_apart`); ``cluster_profiles.csv`` holds all.
PROFILE_FEATURES = 12
#: Most clusters drawn in the profile and cluster × label figures (the largest; the CSV artifacts hold all).
FIGURE_CLUSTERS = 30
#: Most label values drawn in the cluster × label figure (the most frequent; the others summed as "other").
FIGURE_LABEL_VALUES = 12
#: Width of the profile and cluster × label figures in inches: 960 px at matplotlib's 100 dpi, about what MLflow's
#: artifact preview shows without shrinking.
READABLE_WIDTH = 9.6
#: Longest feature name or label value drawn in full; longer ones end in "…".
NAME_CHARACTERS = 18
#: Colour of the tick labels of clusters flagged "mixed?" (cohesion) or of a low majority share.
FLAG_COLOUR = "#C44E52"


def confidence_histogram_figure(histogram: np.ndarray, method: str) -> Figure:
    """Bars of rows per equal-width confidence bin of [0, 1], shape (B,)."""
    histogram = np.asarray(histogram, dtype=np.float64)
    edges = np.linspace(0.0, 1.0, len(histogram) + 1)
    figure = fixed_figure(6, 4)
    axes = figure.add_subplot()
    axes.bar(edges[:-1], histogram, width=np.diff(edges), align="edge", color="#8172B2", edgecolor="white")
    low = histogram[edges[:-1] < 0.5].sum() / max(histogram.sum(), 1.0)
    axes.set_xlabel("row confidence (margin to the nearest other cluster × ensemble share)")
    axes.set_ylabel("rows")
    axes.set_title(f"{method.upper()}: confidence of {int(histogram.sum())} rows ({low:.1%} below 0.5)")
    return figure


def shown_clusters(sizes: np.ndarray, limit: int = FIGURE_CLUSTERS) -> np.ndarray:
    """Positions of the ``limit`` largest of clusters of ``sizes`` (n,) (ties: lower position first), ascending."""
    order = np.argsort(-np.asarray(sizes), kind="stable")[:limit]
    return np.sort(order)


def _short(name, limit: int = NAME_CHARACTERS) -> str:
    text = str(name)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _figure_height(rows: int) -> float:
    """Inches for a heatmap of ``rows`` rows with a title of up to three lines and rotated names below."""
    return max(4.0, 2.6 + 0.32 * rows)


def _annotate(axes, values: np.ndarray, texts, bound: float) -> None:
    """Write ``texts`` (rows, columns) over the cells of an image of ``values``, white on the darkest cells."""
    for (i, j), text in np.ndenumerate(np.asarray(texts, dtype=object)):
        if text:
            dark = abs(values[i, j]) > 0.6 * bound
            axes.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")


def profile_heatmap(profiles, feature_columns, label_table=None, mixed_below: float | None = None) -> Figure:
    """Clusters (rows) × the :data:`PROFILE_FEATURES` features that set them apart most (columns), each cell the
    cluster mean's z-score against the whole table (coloured and written); ``profiles`` as
    :func:`lwec_tasks.core.profiles.cluster_profiles` makes it (with ``cohesion`` when there), at most
    :data:`FIGURE_CLUSTERS` clusters (the largest). Each cluster's row is labelled with its id, size and cohesion
    (flagged "mixed?" below ``mixed_below``, default :data:`~lwec_tasks.core.cohesion.MIXED_BELOW`) and, given a
    ``label_table`` (:func:`~lwec_tasks.core.label_table.cluster_label_table`), its majority label and share.
    :data:`READABLE_WIDTH` wide."""
    from lwec_tasks.core.cohesion import MIXED_BELOW
    from lwec_tasks.core.profiles import features_setting_clusters_apart, z_scores

    mixed_below = MIXED_BELOW if mixed_below is None else mixed_below
    names = list(feature_columns)
    rows = shown_clusters(profiles["size"].to_numpy())
    shown = profiles.iloc[rows]
    z_all = z_scores(profiles, names)
    keep = features_setting_clusters_apart(z_all, PROFILE_FEATURES)
    z = z_all[np.ix_(rows, keep)]
    bound = max(float(np.abs(z).max()) if z.size else 1.0, 1e-9)
    figure = new_figure(figsize=(READABLE_WIDTH, _figure_height(len(shown))), layout="constrained")
    axes = figure.add_subplot()
    image = axes.imshow(z, aspect="auto", cmap="RdBu_r", vmin=-bound, vmax=bound, interpolation="nearest")
    _annotate(axes, z, [[f"{v:+.1f}" for v in row] for row in z], bound)
    axes.set_xticks(np.arange(len(keep)), [_short(names[j]) for j in keep], rotation=40, ha="right",
                    rotation_mode="anchor", fontsize=9)
    labels, flagged = _profile_row_labels(shown, label_table, mixed_below)
    axes.set_yticks(np.arange(len(shown)), labels, fontsize=9)
    for tick, flag in zip(axes.get_yticklabels(), flagged):
        if flag:
            tick.set_color(FLAG_COLOUR)
    has_cohesion = "cohesion" in shown
    flag_rule = f"; cohesion, mixed? below {mixed_below:.2f} × the run's mean" if has_cohesion else ""
    axes.set_ylabel("cluster id (rows" + flag_rule + ("; majority label" if label_table is not None else "") + ")",
                    fontsize=9)
    which = (f"the {len(keep)} of {len(names)} features that set clusters apart most" if len(keep) < len(names)
             else f"all {len(names)} features")
    chosen = "chosen" if len(keep) < len(names) else "ordered"
    lines = [f"Cluster profiles: {which}",
             f"{chosen} by |z| of the cluster mean against the whole table, each cluster's largest in turn; cell: z"]
    if len(shown) < len(profiles):
        lines.append(f"the {len(shown)} largest of {len(profiles)} clusters")
    axes.set_title("\n".join(lines), fontsize=10)
    figure.colorbar(image, ax=axes, label="z-score of the cluster mean", shrink=0.8)
    return figure


def _profile_row_labels(shown, label_table, mixed_below: float) -> tuple[list[str], list[bool]]:
    """Each shown cluster's tick label (id, rows, cohesion, majority label) and whether it is flagged."""
    majority = {}
    if label_table is not None and len(label_table):
        majority = {int(c): (v, s) for c, v, s in zip(label_table["cluster"], label_table["majority_label"],
                                                        label_table["majority_share"])}
    labels, flagged = [], []
    for row in shown.itertuples():
        text = f"{row.cluster}  n={row.size:,}"
        flag = False
        cohesion, relative = getattr(row, "cohesion", None), getattr(row, "cohesion_relative", None)
        if cohesion is not None and cohesion == cohesion:
            flag = relative is not None and relative < mixed_below
            text += f"  coh {cohesion:.2f}" + (" mixed?" if flag else "")
        if int(row.cluster) in majority:
            value, share = majority[int(row.cluster)]
            text += f"  {_short(value, 10)}: {share:.0%}"
        labels.append(text)
        flagged.append(bool(flag))
    return labels, flagged


def cluster_labels_figure(label_table, label_column: str) -> Figure:
    """The cluster × label table (:func:`~lwec_tasks.core.label_table.cluster_label_table`) as a heatmap: clusters
    (rows, at most :data:`FIGURE_CLUSTERS`, the largest) × label values (columns, at most
    :data:`FIGURE_LABEL_VALUES`, the most frequent, the rest summed as "other"), each cell coloured by its share
    of the cluster's labelled rows and written as a row count; on the right each cluster's majority label and its
    share (red below :data:`~lwec_tasks.core.label_table.MAJORITY_BELOW`). :data:`READABLE_WIDTH` wide."""
    from lwec_tasks.core.label_table import MAJORITY_BELOW, label_counts

    counts, names = label_counts(label_table)
    values = [name[len(label_column) + 1:] if name.startswith(f"{label_column}=") else name for name in names]
    columns = np.sort(np.argsort(-counts.sum(axis=0), kind="stable")[:FIGURE_LABEL_VALUES])
    rows = shown_clusters(label_table["size"].to_numpy())
    shown = counts[np.ix_(rows, columns)]
    labels = [_short(values[j], 10) for j in columns]
    other = counts[rows].sum(axis=1) - shown.sum(axis=1)
    if len(columns) < len(values):
        shown, labels = np.column_stack([shown, other]), [*labels, "other"]
    sizes = label_table["size"].to_numpy()[rows]
    share = shown / np.maximum(sizes, 1)[:, None]
    figure = new_figure(figsize=(READABLE_WIDTH, _figure_height(len(rows))), layout="constrained")
    axes = figure.add_subplot()
    axes.imshow(share, aspect="auto", cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest")
    _annotate(axes, share, [[f"{n:,}" if n else "" for n in row] for row in shown], 1.0)
    axes.set_xticks(np.arange(len(labels)), labels, rotation=40 if max(map(len, labels)) > 3 else 0,
                    ha="right" if max(map(len, labels)) > 3 else "center", rotation_mode="anchor", fontsize=9)
    clusters = label_table["cluster"].to_numpy()[rows]
    axes.set_yticks(np.arange(len(rows)), [f"{c}  n={n:,}" for c, n in zip(clusters, sizes)], fontsize=9)
    axes.set_xlabel(f"{_short(label_column, 30)} (label value)", fontsize=9)
    axes.set_ylabel("cluster id (rows with a label value)", fontsize=9)
    right = axes.twinx()
    right.set_ylim(axes.get_ylim())
    majority = label_table["majority_label"].to_numpy()[rows]
    majority_share = label_table["majority_share"].to_numpy(dtype=np.float64)[rows]
    right.set_yticks(np.arange(len(rows)), [f"{_short(v, 10)}: {s:.0%}" for v, s in zip(majority, majority_share)],
                     fontsize=9)
    for tick, value in zip(right.get_yticklabels(), majority_share):
        if value < MAJORITY_BELOW:
            tick.set_color(FLAG_COLOUR)
    right.set_ylabel(f"majority label and its share (red below {MAJORITY_BELOW:.0%})", fontsize=9)
    lines = [f"Clusters × {_short(label_column, 30)}: rows per cluster id and label value",
             "colour: the value's share of the cluster's rows"]
    cut = []
    if len(rows) < len(label_table):
        cut.append(f"the {len(rows)} largest of {len(label_table)} clusters")
    if len(columns) < len(values):
        cut.append(f"the {len(columns)} most frequent of {len(values)} values (the rest in 'other')")
    if cut:
        lines.append("; ".join(cut))
    axes.set_title("\n".join(lines), fontsize=10)
    return figure


def consensus_cdf_figure(distribution) -> Figure:
    """The consensus CDF of the co-association over all pairs of objects (a step function over a/M) with
    the PAC interval (0.1, 0.9) shaded; ``distribution`` a
    :class:`~lwec_tasks.core.coassociation_cdf.CoassociationDistribution`."""
    from lwec_tasks.core.coassociation_cdf import PAC_INTERVAL

    values, cdf = distribution.values, distribution.cdf
    figure = fixed_figure(6, 4)
    axes = figure.add_subplot()
    axes.step(np.concatenate([[0.0], values]), np.concatenate([[0.0], cdf]), where="post", color="#4C72B0")
    axes.axvspan(*PAC_INTERVAL, color="#C44E52", alpha=0.12, label=f"PAC = {distribution.pac():.4f}")
    axes.set_xlim(-0.02, 1.02)
    axes.set_ylim(0.0, 1.02)
    axes.set_xlabel(f"co-association (share of the {distribution.n_columns} base clusterings agreeing)")
    axes.set_ylabel("share of pairs of rows at most")
    axes.set_title(f"Consensus CDF over {sum(distribution.pairs):,} pairs of rows")
    axes.legend(loc="lower right")
    return figure
