"""Task: the run's outcome as the flow's return value and artifacts in the Prefect UI: a markdown summary, a
table of the cluster profiles and a link to the MLflow run, all three artifacts of the flow run itself
(:func:`flow_run_artifact`)."""

from __future__ import annotations

import json

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from lwec_tasks.io import mask_url
from lwec_tasks.masking import scrub
from lwec_tasks.request import ConsensusRequest
from lwec_tasks.tasks.run_facts import RunFacts
from lwec_tasks.tracking import TrackingError, mask_uri, resolve_tracking_uri
from lwec_tasks.tracking.runs import StoreUnreachableError, tracking_error

#: Key of the run-summary artifact in the Prefect UI.
SUMMARY_ARTIFACT_KEY = "lwec-consensus-summary"
#: Keys of the cluster-profiles table artifact and of the link to the MLflow run.
PROFILES_ARTIFACT_KEY, MLFLOW_LINK_ARTIFACT_KEY = "lwec-cluster-profiles", "lwec-mlflow-run"


@task(name="publish-summary", cache_policy=NO_CACHE)
def publish_summary(request: ConsensusRequest, facts: RunFacts, rows_written: int,
                    logged: dict | BaseException, timings: dict[str, float] | None = None) -> dict:
    """Build the run summary, publish it as an artifact and return it.

    ``logged`` is what the MLflow task returned, or the exception it failed
    with (pass its state through ``prefect.allow_failure``). When it failed, the
    labels are already written: the artifact says the MLflow run is missing and
    :class:`~lwec_tasks.tracking.TrackingError` is raised saying where the labels are.

    The summary holds ``run_key``, ``output_table``, ``rows_written`` (0 for a rerun whose labels were
    already stored), ``labels_stored`` (the rows the labels table holds under the run key), ``n_objects``,
    ``k`` (chosen, for ``n_clusters="auto"``), ``n_clusters_found``, ``nmi``/``ari``
    (None without ground truth), ``ids_aligned_to`` and ``id_agreement`` (the
    earlier run the cluster ids agree with, None without one),
    ``mlflow_run_id``, ``mlflow_run_url``, ``model_uri`` (the labelling model),
    ``figures`` (artifact name → URI), ``mlflow_experiment``,
    ``mlflow_tracking_uri`` (password masked), ``timings`` (seconds per stage: the ``timings`` given,
    :meth:`~lwec_tasks.tasks.timings.StageClock.seconds`),
    ``executor`` ("in-process" or "dask") and ``dask_scheduler`` (None in-process),
    ``confidence_mean`` (the rows' mean confidence), ``pac`` (the co-association's PAC, None when not
    computed), ``clusters`` (:func:`cluster_lines`), ``label_column`` (as asked, None without),
    ``columns_left_out`` (column → why it is not clustered on), ``categorical_columns`` (text/boolean column →
    :attr:`~lwec_tasks.tasks.run_facts.RunFacts.categorical`: kind, levels, NULL rows, relevance, whether its NULLs
    are imputed or a level) and ``imputed_values`` (column → values imputed: numeric gaps, text/boolean NULLs
    missing at random).
    The raised error's message is :func:`tracking_failure_message`.
    """
    if facts.quality:
        get_run_logger().info("Agreement with %r: NMI %.4f, ARI %.4f", request.label_column, facts.quality["nmi"],
                              facts.quality["ari"])
    summary = {
        "run_key": request.run_key, "output_table": request.resolved_output_table, "rows_written": rows_written,
        "labels_stored": rows_written or facts.n_objects,
        "n_objects": facts.n_objects, "k": facts.k, "n_clusters_found": int((facts.sizes > 0).sum()),
        "nmi": facts.quality.get("nmi"), "ari": facts.quality.get("ari"),
        "ids_aligned_to": facts.stable.aligned_to, "id_agreement": facts.stable.agreement,
        "mlflow_experiment": request.experiment,
        "mlflow_tracking_uri": mask_uri(resolve_tracking_uri(request.tracking_uri)), "mlflow_run_id": None,
        "mlflow_run_url": None, "model_uri": None, "figures": {}, "timings": dict(timings or {}),
        "executor": facts.executor.name, "dask_scheduler": facts.executor.scheduler,
        "confidence_mean": facts.evidence.mean_confidence,
        "pac": facts.evidence.coassociation.pac() if facts.evidence.coassociation is not None else None,
        "clusters": cluster_lines(facts), "label_column": request.label_column,
        "columns_left_out": {str(name): reason for name, reason in facts.left_out},
        "categorical_columns": facts.categorical,
        "imputed_values": dict(facts.imputed_counts),
        "naive_bayes_moved": list(facts.bayes_moved),
    }
    if isinstance(logged, BaseException):
        summary["mlflow_error"] = str(logged)
        _publish(request, summary)
        raise TrackingError(tracking_failure_message(request, rows_written, logged, facts.n_objects)) from None
    summary["mlflow_run_id"], summary["mlflow_run_url"] = logged["run_id"], logged["url"]
    summary["model_uri"], summary["figures"] = logged["model_uri"], logged["figures"]
    _publish(request, summary)
    _publish_profiles(request, facts)
    if summary["mlflow_run_url"]:
        flow_run_artifact("markdown", MLFLOW_LINK_ARTIFACT_KEY,
                          f"[MLflow run {summary['mlflow_run_id']}]({summary['mlflow_run_url']})",
                          f"The MLflow run of run key {request.run_key!r} (experiment {request.experiment!r})")
    get_run_logger().info("Done: table %r holds %d labels of run key %r (%s); MLflow run %s in experiment %r",
                          summary["output_table"], summary["labels_stored"], request.run_key,
                          "written by this run" if rows_written else "already there from an earlier run, not "
                          "rewritten", summary["mlflow_run_id"], request.experiment)
    return summary


def cluster_lines(facts: RunFacts, top: int = 3) -> list[dict]:
    """One dict per cluster: ``id``, ``size``, ``mean_confidence``, ``cohesion``, ``cohesion_relative`` (over the
    run's size-weighted mean) and ``mixed`` (relative cohesion below :data:`~lwec_tasks.core.cohesion.MIXED_BELOW`;
    None, None and False without a cohesion), ``jaccard_previous`` (None
    without a matched earlier cluster), ``distinctive``: its ``top`` features of largest |z| as [name, z] pairs,
    and with a label column ``majority_label`` and ``majority_share`` (None for a cluster without labelled rows)."""
    from lwec_tasks.core.cohesion import MIXED_BELOW
    from lwec_tasks.core.profiles import distinctive_features

    evidence = facts.evidence
    if evidence.profiles is None:
        return []
    features = distinctive_features(evidence.profiles, evidence.feature_columns, top)
    majority = {}
    if evidence.label_table is not None:
        majority = {int(row.cluster): (_plain(row.majority_label), float(row.majority_share))
                    for row in evidence.label_table.itertuples()}
    lines = []
    for row, distinctive in zip(evidence.profiles.itertuples(), features):
        cohesion = float(row.cohesion) if hasattr(row, "cohesion") else None
        relative = float(row.cohesion_relative) if hasattr(row, "cohesion_relative") else None
        line = {"id": int(row.cluster), "size": int(row.size), "mean_confidence": float(row.mean_confidence),
                "cohesion": cohesion, "cohesion_relative": relative,
                "mixed": relative is not None and relative < MIXED_BELOW,
                "jaccard_previous": facts.stable.jaccard.get(int(row.cluster)),
                "distinctive": [[name, round(z, 3)] for name, z in distinctive]}
        if evidence.label_table is not None:
            line["majority_label"], line["majority_share"] = majority.get(int(row.cluster), (None, None))
        lines.append(line)
    return lines


def _plain(value):
    """A numpy scalar as the Python value (JSON-serialisable), anything else as it is."""
    return value.item() if hasattr(value, "item") else value


def tracking_failure_message(request: ConsensusRequest, rows_written: int, error: BaseException,
                             n_objects: int | None = None) -> str:
    """One line for a run whose labels are in the database but whose MLflow logging failed with ``error``.

    Says where the labels are (table, run key, rows), what failed (MLflow, the
    tracking URI with its password masked, the reason) and what to do: when the
    store did not answer (:class:`~lwec_tasks.tracking.runs.StoreUnreachableError`),
    rerun the same command once MLflow is back (the run key comes from the
    parameters, so the rerun uses the same one); otherwise (a refused request, a
    model MLflow would not take) a rerun would fail alike, and the message says so.
    ``rows_written`` 0 with ``n_objects`` rows
    clustered means an earlier run had written exactly these labels. ``error`` is
    usually a :class:`~lwec_tasks.tracking.TrackingError`; anything else is described the same way.
    """
    tracking_uri = resolve_tracking_uri(request.tracking_uri)
    if not isinstance(error, TrackingError):
        error = tracking_error(error, tracking_uri)
    failure = " ".join(scrub(str(error), tracking_uri).split())
    rows = rows_phrase(rows_written, n_objects)
    if isinstance(error, StoreUnreachableError):
        advice = (f"rerun the same command once MLflow is back: it reuses run key {request.run_key!r} and logs "
                  "the MLflow run")
    else:  # MLflow was there: waiting for it changes nothing
        advice = (f"MLflow was reachable, so rerunning as it is would fail the same way; run key {request.run_key!r} "
                  "stays published without an MLflow run")
    return (f"labels were written to table {request.resolved_output_table!r} (run key {request.run_key!r}, "
            f"{rows}), but {failure}; {advice}")


def _publish(request: ConsensusRequest, summary: dict) -> None:
    flow_run_artifact("markdown", SUMMARY_ARTIFACT_KEY, summary_markdown(request, summary),
                      summary_description(request, summary))


def flow_run_artifact(kind: str, key: str, data: str, description: str) -> None:
    """Create an artifact of type ``kind`` on the flow run of this task, not on the task run: ``data`` is the
    markdown of a ``"markdown"`` artifact, the rows as JSON of a ``"table"`` one.

    The Artifacts tab of a flow run in the Prefect UI lists the flow run's own artifacts under the heading "Flow
    run" and those of its task runs under "Task runs". Prefect's ``create_*_artifact`` called in this task would
    file them under the task run (they take the task run's id from the context, and an artifact's own
    ``task_run_id`` cannot undo that), so the tab would open on "Flow run: None" above the summary. The run's
    summary, profiles and MLflow link describe the flow run, so they carry its id and no task run's. Outside a
    flow run (a summary built by hand) the artifact belongs to no run."""
    from prefect import get_client
    from prefect.client.schemas.actions import ArtifactCreate

    with get_client(sync_client=True) as client:
        client.create_artifact(ArtifactCreate(type=kind, key=key, description=description, data=data,
                                              flow_run_id=flow_run.id, task_run_id=None))


def summary_description(request: ConsensusRequest, summary: dict) -> str:
    """The summary artifact's description, shown above it in the Prefect UI: which run (the flow run's name,
    :mod:`lwec_tasks.tasks.run_names`), what it did and where its labels are, e.g. ``Consensus run
    blobs-k3-lwea: LWEA of table 'blobs' (in-process); labels in 'blobs_lwec_labels' under run key 'x'``."""
    name = flow_run.name or request.run_key  # outside a flow run (a summary built by hand) there is no name
    return (f"Consensus run {name}: {request.method.upper()} of table {request.table!r} ({summary.get('executor')}); "
            f"labels in {summary.get('output_table')!r} under run key {summary.get('run_key')!r}")


def _publish_profiles(request: ConsensusRequest, facts: RunFacts) -> None:
    """The cluster profiles (:func:`profile_rows`) as a table artifact; none for a run without profiles."""
    rows = profile_rows(facts)
    if rows:
        flow_run_artifact("table", PROFILES_ARTIFACT_KEY, json.dumps(rows),
                          f"Cluster profiles of run key {request.run_key!r}: size, mean confidence, cohesion, "
                          "Jaccard overlap with the previous run, each feature's mean as a z-score")


def profile_rows(facts: RunFacts) -> list[dict]:
    """One dict per cluster of the run's profiles (as in ``cluster_profiles.csv`` of the MLflow run): plain numbers,
    NaN as None (no matched earlier cluster); empty without profiles."""
    import math

    if facts.evidence.profiles is None:
        return []
    frame = facts.profiles_with_stability()
    return [{str(name): (None if isinstance(value, float) and math.isnan(value) else
                         value.item() if hasattr(value, "item") else value) for name, value in row.items()}
            for row in frame.to_dict(orient="records")]


def summary_markdown(request: ConsensusRequest, summary: dict) -> str:
    """A markdown table of the run's outcome; the MLflow run id links to its page in the MLflow UI."""
    rows = [
        ("Source", f"`{request.table}` in `{mask_url(request.database_url)}`"),
        ("Rows clustered", summary.get("n_objects")),
        ("Method / k / θ / M / seed",
         f"{request.method.upper()} / {_k(request, summary)} / {request.theta:g} / {request.ensemble_size} / "
         f"{request.seed}"),
        ("Clusters found", summary.get("n_clusters_found")),
        ("NMI / ARI", _pair(summary.get("nmi"), summary.get("ari"))),
        ("Labels table", f"`{summary.get('output_table')}` (run key `{summary.get('run_key')}`, "
                         f"{rows_phrase(summary.get('rows_written', 0), summary.get('n_objects'))})"),
        ("Cluster ids", f"aligned to run `{summary['ids_aligned_to']}` ({_share(summary.get('id_agreement'))} of "
                        "shared rows keep their id)" if summary.get("ids_aligned_to") else "0..k−1 (no earlier run)"
         if request.stable_ids else "0..k−1 (stable ids off)"),
        ("Labelling model", f"`{summary['model_uri']}`" if summary.get("model_uri") else "not logged"),
        ("MLflow run", f"[{summary['mlflow_run_id']}]({summary['mlflow_run_url']}) in experiment "
                       f"`{request.experiment}`" if summary.get("mlflow_run_url")
         else f"`{summary.get('mlflow_run_id')}` in experiment `{request.experiment}`"
         if summary.get("mlflow_run_id") else f"**not logged**: {summary.get('mlflow_error')}"),
        ("Columns left out", "; ".join(f"`{name}` ({reason})" for name, reason in
                                       (summary.get("columns_left_out") or {}).items()) or "none"),
        ("Missing values", _missing_phrase(summary)),
        ("Stage times (s)", ", ".join(f"{k} {v:.2f}" for k, v in summary.get("timings", {}).items())),
    ]
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    return f"# lwec consensus run\n\n| | |\n|---|---|\n{table}\n" + clusters_markdown(summary)


def _missing_phrase(summary: dict) -> str:
    """Numeric values imputed, and text/boolean NULLs missing at random (imputed as unknown) or kept as a level,
    per column."""
    categorical = summary.get("categorical_columns") or {}
    parts = [f"`{name}`: {n} imputed (column mean)" for name, n in (summary.get("imputed_values") or {}).items()
             if name not in categorical]
    parts += [f"`{name}`: {c['null_rows']} NULL, " + ("missing at random (imputed: unknown)"
                                                      if c.get("nulls") == "imputed" else "a level of its own")
              for name, c in categorical.items() if c.get("null_rows")]
    return "; ".join(parts) or "none"


def clusters_markdown(summary: dict) -> str:
    """The clusters section of the summary: one line per cluster (size, mean confidence, cohesion with its
    "mixed?" flag, with a label column the majority label and its share, Jaccard overlap with its matched cluster
    of the earlier run, most distinctive features as z-scores), with the run's mean confidence, PAC, the clusters
    flagged mixed and those whose majority label holds less than
    :data:`~lwec_tasks.core.label_table.MAJORITY_BELOW` of their rows above it; empty when the run has no cluster
    lines."""
    from lwec_tasks.core.cohesion import MIXED_BELOW
    from lwec_tasks.core.label_table import MAJORITY_BELOW

    clusters = summary.get("clusters") or []
    if not clusters:
        return ""
    pac = summary.get("pac")
    labelled = any("majority_share" in c for c in clusters)
    label = f"`{summary['label_column']}`" if summary.get("label_column") else "label"
    mixed = [str(c["id"]) for c in clusters if c.get("mixed")]
    notes = [f"Cohesion (the chance that two of a cluster's rows share a base cluster, averaged over the base "
             f"clusterings) below {MIXED_BELOW:.2f} × the run's mean cohesion flags a cluster as mixed?: "
             f"{', '.join(mixed) if mixed else 'none'}."]
    if labelled:
        low = [f"{c['id']} ({c['majority_label']}: {c['majority_share']:.0%})" for c in clusters
               if c.get("majority_share") is not None and c["majority_share"] < MAJORITY_BELOW]
        notes.append(f"Majority {label} under {MAJORITY_BELOW:.0%} of the cluster's rows: "
                     f"{', '.join(low) if low else 'none'}.")
    head = (f"\n## Clusters\n\nMean row confidence {summary.get('confidence_mean', 0):.3f}; PAC (share of row "
            f"pairs with co-association in (0.1, 0.9)) {'n/a' if pac is None else f'{pac:.4f}'}.\n\n"
            + "\n\n".join(notes) + "\n\n"
            f"| id | size | mean confidence | cohesion |{f' majority {label} |' if labelled else ''} "
            "Jaccard with previous run | most distinctive features (z) |\n"
            f"|---:|---:|---:|---:|{'---|' if labelled else ''}---:|---|\n")
    lines = [f"| {c['id']} | {c['size']:,} | {c['mean_confidence']:.3f} | {_cohesion(c)} |"
             f"{f' {_majority(c)} |' if labelled else ''} "
             f"{'new' if c['jaccard_previous'] is None else format(c['jaccard_previous'], '.3f')} | "
             f"{', '.join(f'`{name}` {z:+.2f}' for name, z in c['distinctive']) or '–'} |" for c in clusters]
    return head + "\n".join(lines) + "\n"


def _cohesion(line: dict) -> str:
    value = line.get("cohesion")
    if value is None:
        return "–"
    relative = line.get("cohesion_relative")
    return (f"{value:.3f}" + ("" if relative is None else f" ({relative:.2f}×)")
            + (" **mixed?**" if line.get("mixed") else ""))


def _majority(line: dict) -> str:
    share = line.get("majority_share")
    return "–" if share is None else f"{line['majority_label']} ({share:.0%})"


def _k(request: ConsensusRequest, summary: dict) -> str:
    return f"auto → {summary.get('k')}" if request.auto_k else str(request.n_clusters)


def _share(value) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _pair(a, b) -> str:
    return "n/a (no label_column)" if a is None else f"{a:.4f} / {b:.4f}"


def rows_phrase(rows_written: int, n_objects: int | None) -> str:
    """How many label rows a run published: ``"N rows"``, or, when it wrote none for ``n_objects`` rows
    clustered (a rerun of a run key whose labels were already exactly these), that they were already there."""
    if not rows_written and n_objects:
        return f"{n_objects} rows, already there from an earlier run"
    return f"{rows_written} rows"
