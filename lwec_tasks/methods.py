"""Registry of consensus methods by the names the paper uses.

Every registered function has one calling shape,
``f(labels_or_ensemble, n_clusters, random_state=None, **params)``, and
returns (N,) labels for an int ``n_clusters`` or (N, len(n_clusters)) for a
sequence. Only LWEA and LWGP take ``theta``; :func:`run_method` passes it to
them alone.

This registry is the only list of methods: the pipeline's method parameter
(:data:`PipelineMethod`, lower-case names of the methods flagged ``pipeline``),
the command-line choices and the dispatch all come from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from lwec_tasks.core.defaults import DEFAULT_THETA
from lwec_tasks.core.errors import LwecInputError


def _lwea(labels, n_clusters, random_state=None, theta: float = DEFAULT_THETA):
    """LWEA (deterministic; ``random_state`` is accepted and ignored)."""
    from lwec_tasks.core.lwea import lwea

    return lwea(labels, n_clusters, theta=theta)


def _lwgp(labels, n_clusters, random_state=None, theta: float = DEFAULT_THETA):
    from lwec_tasks.core.lwgp import lwgp

    return lwgp(labels, n_clusters, theta=theta, random_state=random_state)


def _baseline(name: str) -> Callable:
    """``lwec_tasks.baselines.<name>``, imported on the first call (the registry is read by the
    command line, which should not pay for scikit-learn and METIS to parse its options)."""
    def call(*args, **kwargs):
        return getattr(importlib.import_module("lwec_tasks.baselines"), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


@dataclass(frozen=True)
class Method:
    """A consensus method: paper name, function, whether it uses θ, a summary, whether it runs in the pipeline."""

    name: str
    function: Callable
    uses_theta: bool
    summary: str
    pipeline: bool = False

    @property
    def key(self) -> str:
        """The lower-case name the pipeline (flow parameter, CLI) uses."""
        return self.name.lower()


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("LWEA", _lwea, True, "average linkage on the locally weighted co-association matrix", pipeline=True),
        Method("LWGP", _lwgp, True, "Tcut on the locally weighted object–cluster bipartite graph", pipeline=True),
        Method("EAC", _baseline("eac"), False, "average linkage on the co-association matrix"),
        Method("WEAC", _baseline("weac"), False, "average linkage on the NCAI-weighted co-association matrix"),
        Method("HBGF", _baseline("hbgf"), False, "Tcut on the unweighted object–cluster bipartite graph"),
        Method("CSPA", _baseline("cspa"), False, "METIS on the co-association graph"),
        Method("MCLA", _baseline("mcla"), False, "METIS on the cluster Jaccard graph, then majority association"),
        Method("SEC", _baseline("sec"), False, "spectral ensemble clustering as weighted k-means"),
        Method("KCC", _baseline("kcc"), False, "k-means consensus with the categorical utility"),
    )
}


#: Lower-case names of the methods the pipeline runs, in registry order.
PIPELINE_METHODS: tuple[str, ...] = tuple(m.key for m in METHODS.values() if m.pipeline)
#: The type of the pipeline's ``method`` parameter (a ``Literal`` of :data:`PIPELINE_METHODS`).
PipelineMethod = Literal[PIPELINE_METHODS]  # type: ignore[valid-type]


def pipeline_method(name: str) -> Method:
    """The pipeline method called ``name`` (``"lwea"`` or ``"lwgp"``); other names raise naming the choices."""
    method = METHODS.get(str(name).strip().upper())
    if method is None or not method.pipeline:
        raise LwecInputError(f"method must be one of {list(PIPELINE_METHODS)}, got {name!r}")
    return method


def describe_pipeline_methods() -> str:
    """``"lwea: …; lwgp: …"`` for help texts and the UI form."""
    return "; ".join(f"{m.key}: {m.summary}" for m in METHODS.values() if m.pipeline)


def get_method(name: str) -> Method:
    """Look a method up by its paper name (case-insensitive)."""
    method = METHODS.get(str(name).strip().upper())
    if method is None:
        raise LwecInputError(f"unknown method {name!r}; known methods: {', '.join(METHODS)}")
    return method


def parse_methods(text: str | list[str]) -> list[Method]:
    """Parse ``"LWEA,LWGP,EAC"`` (or a list of names) into methods, in order, without repeats."""
    names = text.split(",") if isinstance(text, str) else list(text)
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise LwecInputError(f"no methods given; known methods: {', '.join(METHODS)}")
    unknown = [n for n in names if n.upper() not in METHODS]
    if unknown:
        raise LwecInputError(f"unknown method(s) {', '.join(repr(n) for n in unknown)}; "
                             f"known methods: {', '.join(METHODS)}")
    return [METHODS[name] for name in dict.fromkeys(n.upper() for n in names)]


def run_method(method: Method | str, labels, n_clusters, theta: float = DEFAULT_THETA, random_state=None):
    """Call a registered method, passing ``theta`` only to methods that use it."""
    method = get_method(method) if isinstance(method, str) else method
    params = {"theta": theta} if method.uses_theta else {}
    return method.function(labels, n_clusters, random_state=random_state, **params)
