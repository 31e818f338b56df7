"""Mixes of base-clustering generators: which generator makes each of the M base clusterings.

Only the standard library here (the command line checks a run's parameters before it imports the numeric
core). A mix is a generator name, a named mix (:data:`NAMED_MIXES`) or weights ``"kmeans:4,genie:3"``;
clustering m's generator follows from the mix and m alone (smooth weighted round robin), so the mix is
reproducible and interleaved. The generators themselves are in :mod:`lwec_tasks.core.generators`.
"""

from __future__ import annotations

from lwec_tasks.core.errors import LwecInputError

#: Every generator, in the order weights are listed.
GENERATORS = ("kmeans", "genie", "spectral", "gmm", "subspace", "dbscan")
#: Named mixes: generator → weight. "lwec" is the default of ``lwec run`` on tables of at most
#: :data:`RUN_LARGE_TABLE_ROWS` rows (see :func:`run_default_mix`).
NAMED_MIXES: dict[str, dict[str, int]] = {
    "paper": {"kmeans": 1},
    "lwec": {"genie": 1, "spectral": 2, "gmm": 1},
}
#: The mix of the library functions and of the paper's reproduction: k-means alone.
DEFAULT_MIX = "kmeans"
#: The mix of a consensus run (``lwec run``, the flow) given none, on a table of at most
#: :data:`RUN_LARGE_TABLE_ROWS` rows (:func:`run_default_mix`).
RUN_DEFAULT_MIX = "genie:1,spectral:2,gmm:1"
#: The mix of a consensus run given none, on a table of more than :data:`RUN_LARGE_TABLE_ROWS` rows.
RUN_DEFAULT_MIX_LARGE = "kmeans:2,genie:1,spectral:1"
#: Rows above which a run given no mix uses :data:`RUN_DEFAULT_MIX_LARGE`.
RUN_LARGE_TABLE_ROWS = 20_000
#: The mix of a consensus run given none, on a table with a weighted text or boolean column: k-means follows
#: the numeric and the categorical columns together, where Genie, the spectral generator and the Gaussian
#: mixture follow the few combinations of levels.
RUN_DEFAULT_MIX_CATEGORICAL = "kmeans"


def run_default_mix(n_rows: int, weighted_categories: bool = False) -> str:
    """The mix of a consensus run given none, for a table of ``n_rows`` rows: :data:`RUN_DEFAULT_MIX` up to
    :data:`RUN_LARGE_TABLE_ROWS` rows, :data:`RUN_DEFAULT_MIX_LARGE` above. Chosen by leaving one table out across
    the benchmark battery, the authors' pools and large synthetic tables (docs/generators.md).

    ``weighted_categories``: the table has a text or boolean column with a weight above 0
    (:attr:`~lwec_tasks.core.encoding.TableEncoding.weighted_categories`); its run uses
    :data:`RUN_DEFAULT_MIX_CATEGORICAL` at any size (chosen on generated mixed tables, ``benchmarks/mixed_types.py``,
    docs/pipeline.md)."""
    if weighted_categories:
        return RUN_DEFAULT_MIX_CATEGORICAL
    return RUN_DEFAULT_MIX if n_rows <= RUN_LARGE_TABLE_ROWS else RUN_DEFAULT_MIX_LARGE


def parse_mix(value, name: str = "generators") -> tuple[tuple[str, int], ...]:
    """The (generator, weight) pairs of a mix, in :data:`GENERATORS` order, weights > 0.

    ``value``: a generator name, a named mix, ``"name:weight,..."`` or a dict; raises
    :class:`LwecInputError` naming the bad value otherwise.
    """
    if isinstance(value, str):
        text = value.strip().lower()
        if text in NAMED_MIXES:
            weights = dict(NAMED_MIXES[text])
        else:
            weights = {}
            for item in (part.strip() for part in text.split(",")):
                generator, colon, weight = item.partition(":")
                generator = generator.strip()
                if generator not in GENERATORS:
                    raise LwecInputError(
                        f"{name}={value!r}: unknown generator {generator!r}; known: {', '.join(GENERATORS)}, "
                        f"or a named mix: {', '.join(NAMED_MIXES)}")
                try:
                    weights[generator] = int(weight) if colon else 1
                except ValueError:
                    raise LwecInputError(f"{name}={value!r}: the weight of {generator!r} must be a whole number, "
                                         f"got {weight.strip()!r}") from None
    elif isinstance(value, dict):
        weights = dict(value)
        unknown = [g for g in weights if g not in GENERATORS]
        if unknown:
            raise LwecInputError(f"{name}: unknown generator {unknown[0]!r}; known: {', '.join(GENERATORS)}")
    else:
        raise LwecInputError(f"{name} must be a generator name, a named mix or 'name:weight,...', got {value!r}")
    bad = [g for g, w in weights.items() if not isinstance(w, int) or isinstance(w, bool) or w < 0]
    if bad:
        raise LwecInputError(f"{name}={value!r}: the weight of {bad[0]!r} must be a whole number >= 0, "
                             f"got {weights[bad[0]]!r}")
    pairs = tuple((g, weights[g]) for g in GENERATORS if weights.get(g, 0) > 0)
    if not pairs:
        raise LwecInputError(f"{name}={value!r}: no generator has a positive weight")
    return pairs


def canonical_mix(value) -> str:
    """The mix as ``"name:weight,..."`` in :data:`GENERATORS` order (``"kmeans"`` for k-means alone)."""
    pairs = parse_mix(value)
    if len(pairs) == 1:
        return pairs[0][0]
    return ",".join(f"{g}:{w}" for g, w in pairs)


def mix_kinds(value, n_clusterings: int) -> tuple[str, ...]:
    """Each of the ``n_clusterings`` base clusterings' generator: smooth weighted round robin over the mix, so
    every prefix holds each generator in about its share."""
    pairs = parse_mix(value)
    total = sum(w for _, w in pairs)
    current = [0] * len(pairs)
    kinds = []
    for _ in range(n_clusterings):
        current = [c + w for c, (_, w) in zip(current, pairs)]
        best = max(range(len(pairs)), key=lambda i: (current[i], -i))
        current[best] -= total
        kinds.append(pairs[best][0])
    return tuple(kinds)
