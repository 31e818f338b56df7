"""How text and boolean columns enter the ensemble: the weighting of their one-hot columns, the views of the
columns the base clusterings see and their generators, chosen by held-out validation
(``python -m benchmarks.mixed_types [--jobs 2] [--only TEXT]``).

Generated mixed tables, two families:

* **structured** — the numerics separate the clusters only in pairs (clusters 2g and 2g + 1 share their numeric
  distribution); a low-cardinality text column and a boolean tell the two of a pair apart (each cluster's
  dominant level, with noise); an uninformative text column of many levels is noise; NULLs in numerics and
  text;
* **unstructured** — the numerics separate the clusters (overlapping blobs); the text and boolean columns,
  including a many-level one, are independent of the clusters.

Each table is encoded exactly as a run encodes it (:class:`lwec_tasks.core.encoding.TableEncoding`: levels
over the whole table; numeric gaps filled with the column mean; a NULL text value its own level; each
categorical column's relevance, its chance-corrected association with the other columns,
:func:`lwec_tasks.core.encoding.column_relevance`), standardised as a run standardises (numerics z-scored,
each indicator scaled by its column's weight), then clustered as a run clusters (the run's default
generators, M = 10, each k from [2, ⌊√N⌋] or, on a table with a weighted categorical column, from
[2, max(∛N, 2k)] (:func:`lwec_tasks.core.base_clusterings.categorical_k_max`), LWEA at the true k). Candidates
(:data:`CANDIDATES`): the ``one_numeric`` weighting (each
categorical column counts like one numeric column) with or without the relevance factor, ``plain`` 0/1
indicators, ``scaled`` (each indicator z-scored); and (:data:`VIEW_CANDIDATES`) ensembles whose base
clusterings see views of the columns (:mod:`lwec_tasks.core.views`: every column, the numerics, the weighted
indicators, a random share of the source columns per clustering), on the run's weighting or the ``even`` one
(each indicator z-scored as if its column's levels were equally common, times the relevance factor), made by
the run's generators or by k-means (k-modes-like on the indicators) on tables with a weighted categorical
column, combined by LWEA or LWGP, with the base clusterings' k drawn from the paper's range or a narrower one
(:func:`k_max_of`). The candidate is chosen on the *selection* tables (seeds
0–2) — most tables meeting the targets, then the highest mean NMI — and reported on the *held-out* tables
(other seeds, other k, purities, level counts, sizes), never looked at while choosing.

Baselines in the same run: lwec on the numeric columns alone (LWEA and LWGP: a candidate is held to the
numeric-only run of its own consensus), and a competent scikit-learn pipeline (median
imputation, scaling, one-hot with a NULL category, KMeans with 10 inits at the true k) with plain and with
scaled one-hot. Targets: structured tables NMI ≥ 0.80 and not below the competent pipeline's best;
unstructured tables no more than 0.02 under lwec on numerics alone.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd

from lwec_tasks.core.base_clusterings import (
    categorical_k_max,
    generate_base_clusterings,
    nearest_cube_root,
    paper_k_max,
)
from lwec_tasks.core.encoding import (
    DEFAULT_RELEVANCE,
    DEFAULT_RELEVANCE_GATE,
    DEFAULT_WEIGHT_FACTOR,
    DEFAULT_WEIGHTING,
    TableEncoding,
    association_sums,
    category_code,
    column_relevance,
    null_relevance,
    numeric_code,
)
from lwec_tasks.core.ensemble import Ensemble
from lwec_tasks.core.lwea import lwea
from lwec_tasks.core.lwgp import lwgp
from lwec_tasks.core.metrics import nmi
from lwec_tasks.core.mixes import RUN_DEFAULT_MIX, run_default_mix
from lwec_tasks.core.seeds import base_seed
from lwec_tasks.core.views import clustering_views

#: label → (weighting, factor, relevance scaling, relevance gate); see
#: :func:`lwec_tasks.core.encoding.column_weight` and :func:`~lwec_tasks.core.encoding.relevance_factor`.
CANDIDATES = {
    "one_numeric": ("one_numeric", 1.0, "none", 0.0),
    "one_numeric x0.5": ("one_numeric", 0.5, "none", 0.0),
    "one_numeric·√r": ("one_numeric", 1.0, "sqrt", 0.0),
    "one_numeric·r": ("one_numeric", 1.0, "linear", 0.0),
    "one_numeric x1.41·√r": ("one_numeric", 1.41, "sqrt", 0.0),
    "one_numeric·√r, gate 0.05": ("one_numeric", 1.0, "sqrt", 0.05),
    "one_numeric·r, gate 0.05": ("one_numeric", 1.0, "linear", 0.05),
    "one_numeric·√r, gate 0.1": ("one_numeric", 1.0, "sqrt", 0.1),
    "one_numeric x1.41·√r, gate 0.05": ("one_numeric", 1.41, "sqrt", 0.05),
    "plain": ("plain", 1.0, "none", 0.0),
    "scaled": ("scaled", 1.0, "none", 0.0),
}
#: label → (encoding (a :data:`CANDIDATES` spec), views in round robin or None, generators of the clusterings
#: seeing every column, generators of the others, consensus[, k range]); see :mod:`lwec_tasks.core.views`.
#: ``"run"``: the run's default mix. A table whose categorical columns are all gated (weight 0) has no views and
#: keeps the run's mix and the paper's k range. k range (:func:`k_max_of`, default ``"paper"``): each base
#: clustering's k from [2, ⌊√N⌋] (``"paper"``), [2, 2k] (``"2k"``), [2, ∛N] (``"cbrt"``), k alone (``"k"``) or
#: the run's [2, max(∛N, 2k)] (``"run"``, :func:`~lwec_tasks.core.base_clusterings.categorical_k_max`).
EVEN_R = ("even", 1.0, "linear", 0.1)
EVEN_SQRT = ("even", 1.0, "sqrt", 0.1)
ONE_NUMERIC = CANDIDATES["one_numeric·√r, gate 0.1"]
VIEW_CANDIDATES = {
    "views all/numeric/categorical": (ONE_NUMERIC, "all,numeric,categorical", "run", "run", "lwea"),
    "views all/numeric/categorical, LWGP": (ONE_NUMERIC, "all,numeric,categorical", "run", "run", "lwgp"),
    "views numeric/categorical": (ONE_NUMERIC, "numeric,categorical", "run", "run", "lwea"),
    "views all/subset": (ONE_NUMERIC, "all,subset", "run", "run", "lwea"),
    "views all/numeric/categorical, k-means": (ONE_NUMERIC, "all,numeric,categorical", "kmeans", "kmeans", "lwea"),
    "even·√r": (EVEN_SQRT, None, "run", "run", "lwea"),
    "even·r": (EVEN_R, None, "run", "run", "lwea"),
    "even·√r, k-means": (EVEN_SQRT, None, "kmeans", "kmeans", "lwea"),
    "even·r, k-means": (EVEN_R, None, "kmeans", "kmeans", "lwea"),
    "even·r, k-means, LWGP": (EVEN_R, None, "kmeans", "kmeans", "lwgp"),
    "even·r, views all/subset, k-means": (EVEN_R, "all,subset", "kmeans", "kmeans", "lwea"),
    "even·r, views all/subset, k-means, LWGP": (EVEN_R, "all,subset", "kmeans", "kmeans", "lwgp"),
    "even·r, views all/subset, run mix + k-means": (EVEN_R, "all,subset", "run", "kmeans", "lwea"),
    "even·r, views all/numeric/categorical, k-means": (EVEN_R, "all,numeric,categorical", "kmeans", "kmeans",
                                                       "lwea"),
    "even·√r, k-means, k ≤ 2k": (EVEN_SQRT, None, "kmeans", "kmeans", "lwea", "2k"),
    "even·√r, k-means, k ≤ ∛N": (EVEN_SQRT, None, "kmeans", "kmeans", "lwea", "cbrt"),
    "even·√r, k-means, k = k": (EVEN_SQRT, None, "kmeans", "kmeans", "lwea", "k"),
    "even·√r, k-means, k ≤ max(∛N, 2k)": (EVEN_SQRT, None, "kmeans", "kmeans", "lwea", "run"),
    "even·√r, k-means, k ≤ max(∛N, 2k), LWGP": (EVEN_SQRT, None, "kmeans", "kmeans", "lwgp", "run"),
    "even·r, k-means, k ≤ max(∛N, 2k)": (EVEN_R, None, "kmeans", "kmeans", "lwea", "run"),
}
#: label → naive-Bayes steps after the run's consensus (:func:`stepped_labels`); a run takes
#: :data:`~lwec_tasks.stages.refinement.BAYES_STEPS` (chosen here on the selection tables).
REFINED_CANDIDATES = {"consensus + 1 naive-Bayes step": 1, "consensus + 3 naive-Bayes steps": 3}
#: label → whether the run's naive-Bayes steps follow: the run with ``--method lwgp`` (reported, not chosen between)
LWGP_CANDIDATES = {"LWGP consensus": False, "LWGP consensus + the run's naive-Bayes steps": True}
NUMERIC_COLUMNS = ("n0", "n1", "n2")


def structured_table(seed: int, n: int = 900, k: int = 4, purity: float = 0.9, noise_levels: int = 25):
    """The numerics separate the clusters only in pairs (clusters 2g and 2g + 1 share their numeric
    distribution); ``segment`` (text, each cluster's dominant level) and ``member`` (boolean, odd clusters)
    tell the two of a pair apart."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    group = y // 2
    frame = pd.DataFrame({"n0": rng.normal(0, 1, n) + 3.0 * group, "n1": rng.normal(0, 1, n) + 1.5 * group,
                          "n2": rng.normal(0, 1, n)})
    levels = np.array([f"seg{c}" for c in range(k + 1)])
    segment = np.where(rng.random(n) < purity, levels[y], levels[rng.integers(0, k + 1, n)]).astype(object)
    segment[rng.random(n) < 0.05] = None
    frame["segment"] = segment
    member = (y % 2 == 1) ^ (rng.random(n) < 1 - purity)
    frame["member"] = member
    frame["noise"] = [f"z{v}" for v in rng.integers(0, noise_levels, n)]
    for name in ("n0", "n2"):
        frame.loc[rng.random(n) < 0.08, name] = np.nan
    return frame, y


def unstructured_table(seed: int, n: int = 900, k: int = 3, std: float = 1.6, noise_levels: int = 25):
    """The numerics separate the clusters (blobs); the text and boolean columns are independent of them."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=n, n_features=len(NUMERIC_COLUMNS), centers=k, cluster_std=std,
                      random_state=seed)
    rng = np.random.default_rng(seed + 1000)
    frame = pd.DataFrame(X, columns=list(NUMERIC_COLUMNS))
    segment = np.array([f"seg{c}" for c in range(4)])[rng.integers(0, 4, n)].astype(object)
    segment[rng.random(n) < 0.05] = None
    frame["segment"] = segment
    frame["member"] = rng.random(n) < 0.4
    frame["noise"] = [f"z{v}" for v in rng.integers(0, noise_levels, n)]
    frame.loc[rng.random(n) < 0.08, "n1"] = np.nan
    return frame, y


#: (family, seed, options of the table's maker) of the held-out tables.
HELD_OUT_SPECS = (("structured", 10, {"k": 4, "purity": 0.85}), ("structured", 11, {"k": 6, "noise_levels": 40}),
                  ("structured", 12, {"k": 4, "purity": 0.93, "n": 1200}),
                  ("unstructured", 10, {"k": 4, "std": 1.8}), ("unstructured", 11, {"k": 3, "noise_levels": 40}),
                  ("unstructured", 12, {"k": 5, "std": 1.4, "n": 1200}))


def table_specs(which: str) -> list[tuple[str, int, dict]]:
    """(family, seed, maker options) of the selection (seeds 0–2, defaults) or the held-out tables."""
    if which == "selection":
        return [("structured", s, {}) for s in range(3)] + [("unstructured", s, {}) for s in range(3)]
    return list(HELD_OUT_SPECS)


def tables(which: str):
    """(name, family, frame, truth, maker options) of the selection or the held-out tables."""
    out = []
    for family, seed, options in table_specs(which):
        make = structured_table if family == "structured" else unstructured_table
        frame, y = make(seed, **options)
        out.append((f"{family}-{seed}", family, frame, y, options))
    return out


def bayes_nmi(frame: pd.DataFrame, y: np.ndarray, k: int = 4, purity: float = 0.9, **_) -> float:
    """NMI of the Bayes classifier of a :func:`structured_table`: each row given the class of highest posterior
    under the generating model with its true parameters (missing values marginalised). No clustering can be
    expected above it; it shows how much of a target a table leaves to reach."""
    from scipy.stats import norm

    group = np.arange(k) // 2
    log_post = np.zeros((len(y), k))
    for column, spread in (("n0", 3.0), ("n1", 1.5)):
        values = frame[column].to_numpy(dtype=np.float64)
        seen = ~np.isnan(values)
        log_post[seen] += norm.logpdf(values[seen, None], spread * group[None, :], 1.0)
    segment = frame["segment"].to_numpy(dtype=object)
    for c in range(k):
        dominant = np.array([value == f"seg{c}" for value in segment])
        chance = (1 - purity) / (k + 1) + purity * dominant
        log_post[:, c] += np.where(pd.isna(segment), 0.0, np.log(chance))
        odd = frame["member"].to_numpy(dtype=bool) == (c % 2 == 1)
        log_post[:, c] += np.log(np.where(odd, purity, 1 - purity))
    return float(nmi(log_post.argmax(axis=1), y))


def encode(frame: pd.DataFrame, weighting: str | None, factor: float = 1.0, relevance: str = "none",
           gate: float = 0.0) -> np.ndarray:
    """(N, width) the table as a run clusters it (:func:`encoded`)."""
    return encoded(frame, weighting, factor, relevance, gate)[0]


def encoded(frame: pd.DataFrame, weighting: str | None, factor: float = 1.0, relevance: str = "none",
            gate: float = 0.0) -> tuple[np.ndarray, TableEncoding]:
    """(X (N, width), its :class:`TableEncoding`): the table as a run clusters it — encoded, numeric gaps filled
    with the column mean, numerics z-scored, indicators weighted (times their relevance's factor, as
    :func:`lwec_tasks.stages.read.load_table` does). ``weighting`` None: the numeric columns alone."""
    codes = [numeric_code(name) for name in NUMERIC_COLUMNS]
    if weighting is not None:
        for name, kind in (("segment", "text"), ("member", "boolean"), ("noise", "text")):
            counts = frame[name].value_counts(dropna=False)
            pairs = [(None if pd.isna(level) else level, int(c)) for level, c in counts.items()]
            codes.append(category_code(name, kind, pairs, weighting, factor))
    encoding = TableEncoding(tuple(codes))
    X, _, _ = encoding.transform(frame, impute=False)
    if encoding.has_categories:
        sums = association_sums(X, encoding)
        encoding = encoding.with_relevance(column_relevance(sums, encoding), relevance, gate,
                                           nulls=null_relevance(sums, encoding))
    numeric = encoding.numeric_positions
    fill = np.nanmean(X[:, numeric], axis=0)
    encoding = encoding.with_fill(dict(zip(NUMERIC_COLUMNS, fill)))
    X, _, _ = encoding.transform(frame)
    mean, std = X[:, numeric].mean(axis=0), X[:, numeric].std(axis=0)
    mean_all, scale_all = encoding.scales(mean, np.where(std > 0, std, 1.0))
    return (X - mean_all) / scale_all, encoding


def k_max_of(rule: str, n: int, k: int) -> int:
    """The largest k of the base clusterings of an N = ``n``-row table clustered at ``k`` under ``rule`` (see
    :data:`VIEW_CANDIDATES`)."""
    return {"paper": paper_k_max(n), "2k": min(2 * k, paper_k_max(n)), "cbrt": max(nearest_cube_root(n), 2),
            "k": k, "run": categorical_k_max(n, k)}[rule]


def lwec_nmi(X: np.ndarray, y: np.ndarray, seed: int, views=None, method: str = "lwea",
             generators: str = RUN_DEFAULT_MIX, k_rule: str = "paper") -> float:
    """NMI of the consensus (``method`` at the true k) of M = 10 base clusterings by ``generators``, each seeing
    its row of ``views`` ((M, width) bool, None: every column), each k from [2, :func:`k_max_of` ``k_rule``]
    (``"k"``: k alone)."""
    k = len(np.unique(y))
    k_min = k if k_rule == "k" else 2
    labels = generate_base_clusterings(X, n_clusterings=10, k_min=k_min, k_max=k_max_of(k_rule, len(y), k),
                                       random_state=seed, generators=generators, views=views)
    return consensus_nmi(labels, y, method, seed)


def consensus_nmi(labels: np.ndarray, y: np.ndarray, method: str, seed: int) -> float:
    k = len(np.unique(y))
    consensus = lwea(Ensemble(labels), k) if method == "lwea" else lwgp(Ensemble(labels), k, random_state=seed)
    return float(nmi(consensus, y))


def run_nmis(frame: pd.DataFrame, y: np.ndarray, seed: int, steps=(), method: str = "lwea") -> dict:
    """NMI of the table clustered as a run given no options clusters it (``"run"``: :func:`run_consensus`, then on
    a table with a weighted text or boolean column the run's :data:`~lwec_tasks.stages.refinement.BAYES_STEPS`
    naive-Bayes steps, :func:`stepped_labels`), of the consensus alone (``"consensus"``), and after each number of
    ``steps`` (keyed by it)."""
    from lwec_tasks.stages.refinement import BAYES_STEPS

    labels, X, encoding = run_consensus(frame, y, seed, method)
    gaps = frame[list(NUMERIC_COLUMNS)].isna().to_numpy()
    out = {"consensus": float(nmi(labels, y))}
    for key, n in (("run", BAYES_STEPS), *((n, n) for n in steps)):
        out[key] = float(nmi(stepped_labels(X, encoding, gaps, labels, n), y)) if encoding.weighted_categories \
            else out["consensus"]
    return out


def run_consensus(frame: pd.DataFrame, y: np.ndarray, seed: int, method: str = "lwea"
                  ) -> tuple[np.ndarray, np.ndarray, TableEncoding]:
    """(consensus labels (N,), X, its encoding): the table clustered as a run given no options clusters it: the
    run's encoding (:data:`~lwec_tasks.core.encoding.DEFAULT_WEIGHTING` and relevance), the run's default mix for
    the table (:func:`~lwec_tasks.core.mixes.run_default_mix`: k-means where a text or boolean column is weighted),
    M = 10, each k from [2, ⌊√N⌋], or where a text or boolean column is weighted from
    [2, :func:`~lwec_tasks.core.base_clusterings.categorical_k_max`], LWEA (or with ``method`` "lwgp" LWGP, seeded
    by ``seed``) at the true k."""
    X, encoding = encoded(frame, DEFAULT_WEIGHTING, DEFAULT_WEIGHT_FACTOR, DEFAULT_RELEVANCE, DEFAULT_RELEVANCE_GATE)
    weighted = bool(encoding.weighted_categories)
    k = len(np.unique(y))
    labels = generate_base_clusterings(X, n_clusterings=10, k_min=2,
                                       k_max=k_max_of("run" if weighted else "paper", len(y), k), random_state=seed,
                                       generators=run_default_mix(len(y), weighted))
    consensus = lwea(Ensemble(labels), k) if method == "lwea" else lwgp(Ensemble(labels), k, random_state=seed)
    return consensus, X, encoding


def stepped_labels(X: np.ndarray, encoding: TableEncoding, gaps: np.ndarray, labels: np.ndarray,
                   steps: int) -> np.ndarray:
    """(N,) labels after ``steps`` naive-Bayes steps from ``labels`` (0..k−1), the run's own
    (:mod:`lwec_tasks.core.naive_bayes`; ``gaps`` (N, numerics) marks the imputed values); the numerics scaled by
    the whole table's moments, as a run scales them."""
    from lwec_tasks.core.naive_bayes import BayesLayout, BayesModel, bayes_sums

    spread = X.std(axis=0)
    layout = BayesLayout.of(encoding, X.mean(axis=0), np.where(spread > 0, spread, 1.0))
    X = X.copy()  # the indicators as a run's partitions hold them: 0/1, not weighted
    levels = layout.level_columns
    X[:, levels] = X[:, levels] > 0
    k = int(labels.max()) + 1
    for _ in range(steps):
        labels = BayesModel.fit(bayes_sums(X, gaps, labels, k, layout), layout).assign(X, gaps)
    return labels


def views_nmi(frame: pd.DataFrame, y: np.ndarray, seed: int, spec: tuple, names: str | None, every: str,
              others: str, method: str, k_rule: str = "paper") -> float:
    """NMI of a :data:`VIEW_CANDIDATES` design: the table encoded by ``spec``, its views ``names`` drawn as a run
    draws them, the clusterings seeing every column made by ``every``, the others by ``others`` (``"run"``: the
    run's default mix), each k drawn under ``k_rule`` (:func:`k_max_of`); a table whose categorical columns are
    all gated gets the run's mix alone, with the paper's k range."""
    X, encoding = encoded(frame, *spec)
    views = None if names is None else clustering_views(encoding, 10, names, base_seed(seed))
    weighted = bool(encoding.weighted_categories)
    mixes = {"run": RUN_DEFAULT_MIX, "kmeans": "kmeans" if weighted else RUN_DEFAULT_MIX}
    k_rule = k_rule if weighted else "paper"
    k = len(np.unique(y))
    k_min, k_max = (k if k_rule == "k" else 2), k_max_of(k_rule, len(y), k)
    labels = {mix: generate_base_clusterings(X, 10, k_min, k_max, random_state=seed, generators=mixes[mix],
                                             views=views)
              for mix in {every, others}}
    seen_all = np.ones(10, dtype=bool) if views is None else views.all(axis=1)
    columns = [labels[every if seen_all[m] else others][:, m] for m in range(10)]
    return consensus_nmi(np.column_stack(columns), y, method, seed)


def competent_nmi(frame: pd.DataFrame, y: np.ndarray, scaled: bool, seed: int) -> float:
    """Median imputation + scaling of the numerics, one-hot (NULL its own category; ``scaled``: z-scored
    indicators), KMeans(k, n_init=10)."""
    from sklearn.cluster import KMeans
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    data = frame.copy()
    for name in ("segment", "member", "noise"):
        data[name] = data[name].astype(object).where(data[name].notna(), "NULL").astype(str)
    categorical = make_pipeline(OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                                *([StandardScaler()] if scaled else []))
    prepare = ColumnTransformer([("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()),
                                  list(NUMERIC_COLUMNS)),
                                 ("cat", categorical, ["segment", "member", "noise"])])
    k = len(np.unique(y))
    labels = KMeans(k, n_init=10, random_state=seed).fit_predict(prepare.fit_transform(data))
    return float(nmi(labels, y))


def evaluate_table(item, candidates: dict, seed: int) -> dict:
    name, family, frame, y, options = item
    numeric = encode(frame, None)
    row = {"table": name, "family": family, "numeric_only": lwec_nmi(numeric, y, seed),
           "numeric_only_lwgp": lwec_nmi(numeric, y, seed, method="lwgp"),
           "competent_plain": competent_nmi(frame, y, False, seed),
           "competent_scaled": competent_nmi(frame, y, True, seed)}
    run = run_nmis(frame, y, seed, [spec for label, spec in candidates.items() if label in REFINED_CANDIDATES])
    row.update(run=run["run"], consensus=run["consensus"])
    if family == "structured":
        row["bayes"] = bayes_nmi(frame, y, **options)
    for label, spec in candidates.items():
        if label in VIEW_CANDIDATES:
            row[label] = views_nmi(frame, y, seed, *spec)
        elif label in REFINED_CANDIDATES:
            row[label] = run[spec]
        elif label in LWGP_CANDIDATES:
            row[label] = run_nmis(frame, y, seed, method="lwgp")["run" if spec else "consensus"]
        else:
            row[label] = lwec_nmi(encode(frame, *spec), y, seed)
    print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()},
                     ensure_ascii=False), flush=True)
    return row


def evaluate(which: str, candidates: dict, seed: int = 0, jobs: int = 1) -> list[dict]:
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    items = tables(which)
    if jobs <= 1:
        return [evaluate_table(item, candidates, seed) for item in items]
    import multiprocessing

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(partial(evaluate_table, candidates=candidates, seed=seed), items))


def meets(row: dict, value: float, method: str = "lwea") -> bool:
    """Whether ``value`` meets the target on ``row``'s table (unstructured: against the numeric-only run of the
    same consensus ``method``)."""
    if row["family"] == "structured":
        return value >= 0.80 and value >= max(row["competent_plain"], row["competent_scaled"]) - 1e-9
    return value >= row["numeric_only" if method == "lwea" else "numeric_only_lwgp"] - 0.02


def method_of(label: str) -> str:
    if label in LWGP_CANDIDATES:
        return "lwgp"
    return VIEW_CANDIDATES[label][4] if label in VIEW_CANDIDATES else "lwea"


def has_views(label: str) -> bool:
    return label in VIEW_CANDIDATES and VIEW_CANDIDATES[label][1] is not None


def met(rows: list[dict], label: str) -> int:
    return sum(meets(r, r[label], method_of(label)) for r in rows)


def choose(rows: list[dict], candidates) -> str:
    def score(label):
        return (met(rows, label), float(np.mean([r[label] for r in rows])))

    return max(candidates, key=score)


def report(rows: list[dict], labels) -> None:
    for label in labels:
        print(f"  {label:32s} met {met(rows, label)}/{len(rows)}; "
              + ", ".join(f"{r['table']} {r[label]:.3f}" for r in rows))
    for base in ("run", "consensus", "numeric_only", "numeric_only_lwgp", "competent_plain", "competent_scaled",
                 "bayes"):
        print(f"  {base:32s}         " + ", ".join(f"{r['table']} {r[base]:.3f}" for r in rows if base in r))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="tables evaluated at once (processes)")
    parser.add_argument("--only", default="", help="candidates whose label contains this text (default: all)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    every = {**CANDIDATES, **VIEW_CANDIDATES, **REFINED_CANDIDATES, **LWGP_CANDIDATES}
    candidates = {label: spec for label, spec in every.items() if args.only in label}
    print("# selection tables")
    selection = evaluate("selection", candidates, args.seed, args.jobs)
    chosen = choose(selection, candidates)
    runnable = [label for label in candidates
                if method_of(label) == "lwea" and not has_views(label) and label not in REFINED_CANDIDATES]
    chosen_lwea = choose(selection, runnable) if runnable else None
    report(selection, candidates)
    print(f"# chosen on the selection tables: {chosen}; among the designs a run carries out (LWEA, the run's "
          f"default method; no per-clustering views): {chosen_lwea}")
    print("# held-out tables (every candidate shown; the chosen ones are the result)")
    held_out = evaluate("held_out", candidates, args.seed, args.jobs)
    report(held_out, candidates)
    for label in dict.fromkeys((chosen, chosen_lwea)):
        if label is not None:
            print(f"# held-out result of {label}: met {met(held_out, label)}/{len(held_out)}")
    print(f"# held-out result of the run as it ships: met {met(held_out, 'run')}/{len(held_out)}")
    print(f"# {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
