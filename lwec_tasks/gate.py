"""The quality gate of a run: ``promote_if`` conditions over its MLflow metrics, parsed and judged.

``promote_if`` is a comma-separated list of conditions ``<metric><operator><number>``, e.g.
``"confidence_mean>=0.8,pac<=0.1"``; the operators are :data:`OPERATORS`, the metrics the run's MLflow
metric names (:func:`check_metric_name`). :func:`parse_gate` checks the text before anything runs
(:class:`~lwec_tasks.core.errors.LwecInputError` naming the offending condition); :func:`judge` decides a
finished run from its metrics (a :class:`Verdict`). A condition over a metric the run has not measured
(``jaccard_previous_mean`` or ``id_agreement_with_previous_run`` of a table's first run) is not applied,
so the first run of a table can be promoted. Standard library only.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass

from lwec_tasks.core.errors import LwecInputError

#: Comparison operators of a condition, longest spelling first (so ``>=`` is not read as ``>``).
OPERATORS = {">=": operator.ge, "<=": operator.le, "==": operator.eq, ">": operator.gt, "<": operator.lt}

#: The run's MLflow metrics a condition may name (besides :data:`METRIC_PATTERNS`).
GATE_METRICS = (
    "confidence_mean", "confidence_below_0_5_fraction", "pac", "pac_rows", "jaccard_previous_mean",
    "clusters_matched_previous", "id_agreement_with_previous_run", "objects_shared_with_previous_run",
    "nmi", "ari", "eci_mean", "eci_median", "eci_min", "eci_max", "uncertainty_mean_bits", "n_base_clusters",
    "n_microclusters", "n_clusters_found", "largest_cluster_fraction", "n_rows_read", "n_rows_dropped", "k",
    "model_labels_given_back", "k_criterion_best_k", "k_criterion_rows",
)
#: Families of per-cluster and per-stage metrics, as patterns of their names.
METRIC_PATTERNS = {
    "cluster_<id>_size": re.compile(r"cluster_\d+_size"),
    "cluster_<id>_mean_confidence": re.compile(r"cluster_\d+_mean_confidence"),
    "cluster_<id>_jaccard_previous": re.compile(r"cluster_\d+_jaccard_previous"),
    "time_<stage>_s": re.compile(r"time_[a-z_]+_s"),
}

_CONDITION = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|==|>|<)\s*([^\s<>=!]+)\s*")


class RunHeld(Exception):  # noqa: N818 - the run's outcome, not a fault
    """A gated run failed a condition: its labels are published under its run key but not promoted. The
    message names each failed condition and the run's figure."""


@dataclass(frozen=True)
class Condition:
    """One condition: ``metric`` ``operator`` ``threshold`` (e.g. ``confidence_mean >= 0.8``)."""

    metric: str
    operator: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.metric}{self.operator}{self.threshold:g}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` of the metric meets the condition (a NaN never does)."""
        return not math.isnan(value) and OPERATORS[self.operator](value, self.threshold)


@dataclass(frozen=True)
class Verdict:
    """A gated run's outcome: ``failed`` (condition, the run's figure) pairs, ``unmeasured`` conditions over
    metrics the run has not (not applied). ``promoted`` when nothing failed."""

    failed: tuple[tuple[Condition, float], ...]
    unmeasured: tuple[Condition, ...]

    @property
    def promoted(self) -> bool:
        return not self.failed

    def describe(self) -> str:
        """``"confidence_mean=0.612 (needs >=0.8), pac=0.2 (needs <=0.1)"``: each failed condition and figure."""
        return ", ".join(f"{c.metric}={value:.4g} (needs {c.operator}{c.threshold:g})" for c, value in self.failed)


def available_metrics() -> str:
    """The metric names a condition may use, for messages."""
    return ", ".join((*GATE_METRICS, *METRIC_PATTERNS))


def check_metric_name(name: str, condition: str) -> None:
    """:class:`LwecInputError` naming ``condition`` and the available metrics unless ``name`` is a run metric."""
    if name in GATE_METRICS or any(pattern.fullmatch(name) for pattern in METRIC_PATTERNS.values()):
        return
    raise LwecInputError(f"promote_if condition {condition!r}: unknown metric {name!r}; available metrics: "
                         f"{available_metrics()}")


def parse_gate(text: str) -> tuple[Condition, ...]:
    """The conditions of ``text`` (``"metric>=x,metric<=y"``), in order.

    Raises :class:`LwecInputError` naming the offending condition: not ``<metric><operator><number>``, an
    operator other than :data:`OPERATORS`, a threshold that is not a finite number, an unknown metric.
    """
    if not isinstance(text, str) or not text.strip():
        raise LwecInputError(f"promote_if must be conditions such as 'confidence_mean>=0.8,pac<=0.1', got {text!r}")
    conditions = []
    for part in text.split(","):
        match = _CONDITION.fullmatch(part)
        if match is None:
            raise LwecInputError(f"promote_if condition {part.strip()!r} is not <metric><operator><number> with an "
                                 f"operator among {', '.join(OPERATORS)} (e.g. 'confidence_mean>=0.8')")
        name, op, number = match.groups()
        try:
            threshold = float(number)
        except ValueError:
            threshold = math.nan
        if not math.isfinite(threshold):
            raise LwecInputError(f"promote_if condition {part.strip()!r}: {number!r} is not a finite number")
        check_metric_name(name, part.strip())
        conditions.append(Condition(name, op, threshold))
    return tuple(conditions)


def canonical_gate(text: str | None) -> str | None:
    """``text`` checked (:func:`parse_gate`) and spelled without blanks; None stays None."""
    return None if text is None else ",".join(str(c) for c in parse_gate(text))


def judge(conditions: tuple[Condition, ...], metrics: dict) -> Verdict:
    """The :class:`Verdict` of ``conditions`` on the run's ``metrics`` (name → number or None)."""
    failed, unmeasured = [], []
    for condition in conditions:
        value = metrics.get(condition.metric)
        if value is None:
            unmeasured.append(condition)
        elif not condition.holds(float(value)):
            failed.append((condition, float(value)))
    return Verdict(tuple(failed), tuple(unmeasured))
