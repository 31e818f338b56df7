"""``python -m benchmarks battery``: scoring, anchors and the report on a tiny folder in the battery's format."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import adjusted_mutual_info_score

from benchmarks import battery
from benchmarks.cli import build_parser

#: The development half of the battery: $LWEC_BATTERY_DIR, else ../shared/data/battery next to the project.
BATTERY = Path(os.environ.get("LWEC_BATTERY_DIR")
               or Path(__file__).resolve().parents[3] / "shared" / "data" / "battery")
ANCHORS = """# anchors

## Mean AMI, this half (2 data sets)

| method | kind | n | mean AMI | mean ARI | mean NMI | AMI (common) | wins | mean rank |
|---|---|---:|---:|---:|---:|---:|---:|---:|
| GIc | single | 2 | 0.901 | 0.9 | 0.9 | 0.9 | 1 | 1.0 |
| LWEA | lwec | 2 | 0.5 | 0.5 | 0.5 | 0.5 | 0 | 2.0 |

## Per data set (this half): lwec against the best single setting of any anchor

| data set | n | k | LWEA | LWGP | best anchor | AMI | LWEA − best | lwec s/seed |
|---|---:|---|---:|---:|---|---:|---:|---:|
| toy/blobs | 90 | 3 | 0.5 ± 0.1 | 0.5 ± 0.1 | Genie_G0.3 | 0.987 | -0.5 | 0.1 |
"""


def _write(path: Path, rows) -> None:
    with gzip.open(path, "wt") as handle:
        np.savetxt(handle, rows, fmt="%.6f" if np.asarray(rows).dtype.kind == "f" else "%d")


@pytest.fixture
def folder(tmp_path):
    """Two data sets: three far-apart blobs (labels 1..3, a second labelling with 2 clusters and noise) and
    two blobs; an ANCHORS.md one folder up."""
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [20.0, 0.0], [0.0, 20.0]])
    X = np.concatenate([c + rng.normal(size=(30, 2)) for c in centres])
    truth = np.repeat([1, 2, 3], 30)
    coarse = np.where(truth == 3, 2, 1)
    coarse[::7] = 0  # noise points
    data = tmp_path / "battery"
    (data / "toy").mkdir(parents=True)
    _write(data / "toy" / "blobs.data.gz", X)
    _write(data / "toy" / "blobs.labels0.gz", truth)
    _write(data / "toy" / "blobs.labels1.gz", coarse)
    _write(data / "toy" / "pair.data.gz", X[:60])
    _write(data / "toy" / "pair.labels0.gz", truth[:60])
    (data / "toy" / "lonely.data.gz").write_bytes(gzip.compress(b"1 2\n"))  # no labels: not a data set
    (tmp_path / "ANCHORS.md").write_text(ANCHORS)
    return data


def test_the_sets_their_labellings_and_true_ks_are_found(folder):
    assert battery.find_sets(folder) == ["toy/blobs", "toy/pair"]
    labellings = battery.reference_labellings(folder, "toy/blobs")
    assert [battery.true_k(labels) for labels in labellings] == [3, 2]
    assert battery.find_anchors(folder) == folder.parent / "ANCHORS.md"


def test_noise_points_are_left_out_of_the_score():
    reference = np.array([1, 1, 1, 2, 2, 2, 0, 0])
    found = np.array([5, 5, 5, 6, 6, 6, 5, 6])
    assert battery.score(found, reference) == pytest.approx(1.0)
    found[0] = 6
    expected = adjusted_mutual_info_score(reference[:6], found[:6])
    assert battery.score(found, reference) == pytest.approx(expected) and expected < 1


def test_each_labelling_is_scored_at_its_own_k_and_the_best_counts(folder):
    result = battery.run_set(str(folder), "toy/blobs", (0, 1), "kmeans", 6)
    assert result.ks == [3, 2] and result.n == 90 and len(result.seconds) == 2
    # three far-apart blobs: the consensus at k = 3 is the truth itself
    assert result.scores["LWEA"] == pytest.approx([1.0, 1.0])
    assert result.scores["LWGP"] == pytest.approx([1.0, 1.0])


def test_the_anchor_tables_are_parsed(folder):
    means, best = battery.parse_anchors(folder.parent / "ANCHORS.md")
    assert {m["method"]: m["ami"] for m in means} == {"GIc": 0.901, "LWEA": 0.5}
    assert best == {"toy/blobs": {"anchor": "Genie_G0.3", "ami": 0.987}}


@pytest.mark.parametrize("text, seeds", [("0-4", (0, 1, 2, 3, 4)), ("3", (3,)), ("0,2-3", (0, 2, 3))])
def test_seed_lists(text, seeds):
    assert battery.seed_list(text) == seeds


def test_the_command_prints_means_anchors_and_writes_json(folder, tmp_path, capsys):
    out = tmp_path / "scores.json"
    args = build_parser().parse_args(["battery", "--data", str(folder), "--seeds", "0-1",
                                      "-M", "5", "--generators", "kmeans:1,genie:1", "--json", str(out)])
    assert args.handler(args) == 0
    text = capsys.readouterr().out
    assert "| GIc | single | 2 | 0.901 |" in text  # the anchors' mean beside lwec's
    assert "| LWEA (kmeans:1,genie:1) | lwec | 2 |" in text
    assert "| toy/blobs | 90 | 3,2 |" in text and "| Genie_G0.3 | 0.987 |" in text
    stored = json.loads(out.read_text())
    assert stored["generators"] == "kmeans:1,genie:1" and stored["seeds"] == [0, 1]
    by_name = {r["name"]: r for r in stored["results"]}
    mean = np.mean([np.mean(r["scores"]["LWEA"]) for r in stored["results"]])
    assert f"| {mean:.3f} |" in text and len(by_name["toy/pair"]["scores"]["LWGP"]) == 2


@pytest.mark.parametrize("argv, culprit", [
    (["--generators", "kmeans,wobble"], "'wobble'"),
    (["--seeds", "x"], "'x'"),
])
def test_bad_options_are_refused_naming_the_value(folder, argv, culprit, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["battery", "--data", str(folder), *argv])
    assert culprit in capsys.readouterr().err


def test_a_folder_without_data_sets_is_refused(tmp_path):
    from lwec_tasks.core.errors import LwecInputError

    with pytest.raises(LwecInputError, match="no data sets"):
        battery.run_battery(tmp_path, (0,), "kmeans", 5)


@pytest.mark.skipif(not (BATTERY / "sipu" / "flame.data.gz").exists(), reason="the battery data is not here")
def test_a_real_battery_set_scores_as_the_paper_protocol_did():
    result = battery.run_set(str(BATTERY), "sipu/flame", (0,), "kmeans", 10)
    assert result.ks == [2, 2] and 0 <= result.scores["LWEA"][0] <= 1


def _scores_file(path: Path, mix: str, per_set: dict) -> Path:
    """A ``--json`` file: per set, the same AMI for every seed of both methods, or (LWEA, LWGP) pairs."""
    results = []
    for name, value in per_set.items():
        lwea_score, lwgp_score = value if isinstance(value, tuple) else (value, value)
        results.append({"name": name, "n": 10, "ks": [2], "seconds": [0.1],
                        "scores": {"LWEA": [lwea_score, lwea_score], "LWGP": [lwgp_score, lwgp_score]}})
    path.write_text(json.dumps({"generators": mix, "seeds": [0, 1], "results": results}))
    return path


def test_leave_one_out_scores_each_set_with_the_mix_chosen_on_the_others(tmp_path):
    from benchmarks import battery_choice

    # "a" wins on sets 1-2 by a little and loses set 3 by a lot: over all sets "b" wins; holding set 3 out,
    # "a" is chosen (it wins the other two) and scores 0.2 there.
    a = _scores_file(tmp_path / "a.json", "kmeans", {"s1": 0.9, "s2": 0.9, "s3": 0.2})
    b = _scores_file(tmp_path / "b.json", "genie", {"s1": 0.8, "s2": 0.8, "s3": 0.9})
    result = battery_choice.leave_one_out([battery_choice.load(a), battery_choice.load(b)])
    assert result["chosen"] == "genie" and result["tuned"]["LWEA"] == pytest.approx((0.8 + 0.8 + 0.9) / 3)
    # holding s1 out: a has 0.9+0.2=1.1, b has 0.8+0.9=1.7 -> b (0.8); s2 likewise (0.8); s3 out: a 1.8 > b 1.6 -> a
    assert result["chosen_per_set"] == {"s1": "genie", "s2": "genie", "s3": "kmeans"}
    assert result["held_out"]["LWEA"] == pytest.approx((0.8 + 0.8 + 0.2) / 3)
    assert result["held_out_seed_sd"]["LWGP"] == 0
    assert "Leave one data set out: LWEA 0.600" in battery_choice.report(result)


def test_leave_one_out_refuses_candidates_scored_on_different_sets(tmp_path):
    from benchmarks import battery_choice

    a = _scores_file(tmp_path / "a.json", "kmeans", {"s1": 0.9})
    b = _scores_file(tmp_path / "b.json", "genie", {"s2": 0.8})
    with pytest.raises(ValueError, match="different data sets"):
        battery_choice.leave_one_out([battery_choice.load(a), battery_choice.load(b)])
