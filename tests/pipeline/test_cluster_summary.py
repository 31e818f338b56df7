"""The run summary's clusters section names the clusters flagged mixed and those whose majority label is low."""

from lwec_tasks.core.cohesion import MIXED_BELOW
from lwec_tasks.core.label_table import MAJORITY_BELOW
from lwec_tasks.tasks.summary import clusters_markdown


def line(cluster_id, relative, majority_share=None, **extra):
    out = {"id": cluster_id, "size": 100, "mean_confidence": 0.8, "cohesion": 0.5 * relative,
           "cohesion_relative": relative, "mixed": relative < MIXED_BELOW, "jaccard_previous": None,
           "distinctive": [["f0", 1.5]], **extra}
    if majority_share is not None:
        out.update(majority_label=cluster_id, majority_share=majority_share)
    return out


def test_the_summary_names_mixed_clusters_and_clusters_of_a_low_majority():
    summary = {"label_column": "target", "confidence_mean": 0.8, "pac": 0.1,
               "clusters": [line(3, 0.8, 0.52), line(4, 1.2, 0.99), line(5, 1.0, MAJORITY_BELOW - 0.01)]}
    text = clusters_markdown(summary)
    assert f"below {MIXED_BELOW:.2f} × the run's mean cohesion flags a cluster as mixed?: 3." in text
    assert "Majority `target` under 70% of the cluster's rows: 3 (3: 52%), 5 (5: 69%)." in text
    assert "| 3 | 100 | 0.800 | 0.400 (0.80×) **mixed?** | 3 (52%) | new | `f0` +1.50 |" in text
    assert "| 4 | 100 | 0.800 | 0.600 (1.20×) | 4 (99%) | new | `f0` +1.50 |" in text


def test_without_a_label_column_the_summary_has_no_majority_column():
    text = clusters_markdown({"confidence_mean": 0.8, "pac": None, "clusters": [line(0, 1.0)]})
    assert "majority" not in text.lower() and "mixed?: none." in text
    assert "| 0 | 100 | 0.800 | 0.500 (1.00×) | new | `f0` +1.50 |" in text
