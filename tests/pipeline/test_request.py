"""One parameter model for the flow, the CLI and the deployments; one method registry."""

from __future__ import annotations

import inspect
import typing

import pytest
import yaml

from flows.consensus import consensus_flow
from helpers.pipeline import PROJECT_ROOT
from lwec_tasks.cli import build_parser
from lwec_tasks.core.errors import LwecInputError
from lwec_tasks.methods import METHODS, PIPELINE_METHODS, run_method
from lwec_tasks.request import ConsensusRequest

REQUIRED = {"database_url": "sqlite:///x.db", "table": "t", "n_clusters": 3}


def test_flow_signature_lists_exactly_the_model_fields_with_the_same_defaults():
    signature = inspect.signature(consensus_flow.fn).parameters
    assert list(signature) == list(ConsensusRequest.model_fields)
    for name, field in ConsensusRequest.model_fields.items():
        default = signature[name].default
        if field.is_required():
            assert default is inspect.Parameter.empty, name
        else:
            assert default == field.default, name


def test_method_choices_come_from_the_registry():
    assert PIPELINE_METHODS == tuple(m.name.lower() for m in METHODS.values() if m.pipeline) == ("lwea", "lwgp")
    flow_type = typing.get_type_hints(consensus_flow.fn)["method"]
    assert typing.get_args(flow_type) == PIPELINE_METHODS
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    method_option = next(a for a in run_parser._actions if a.dest == "method")
    assert tuple(method_option.choices) == PIPELINE_METHODS


@pytest.mark.parametrize("name", ["EAC", "kcc", "spectral"])
def test_non_pipeline_methods_are_refused_by_the_request(name):
    with pytest.raises(LwecInputError, match=r"method must be one of \['lwea', 'lwgp'\]"):
        ConsensusRequest(**REQUIRED, method=name)


def test_dispatch_goes_through_the_registry():
    import numpy as np

    labels = np.array([[0, 0, 1], [0, 0, 1], [1, 1, 0], [1, 1, 0], [2, 1, 0], [2, 1, 1]])
    for key in PIPELINE_METHODS:
        expected = METHODS[key.upper()].function(labels, 2, random_state=0, theta=0.4)
        np.testing.assert_array_equal(run_method(key, labels, 2, theta=0.4, random_state=0), expected)


@pytest.mark.parametrize("overrides, message", [
    ({"n_clusters": 1}, "n_clusters must be >= 2, got 1"),
    ({"n_clusters": True}, "n_clusters must be an integer, got True"),
    ({"ensemble_size": 0}, "ensemble_size must be >= 1"),
    ({"theta": float("nan")}, "theta must be finite and > 0"),
    ({"seed": -1}, "seed must be >= 0"),
    ({"chunk_size": 0}, "chunk_size must be >= 1"),
    ({"table": " "}, "table must be a non-empty string"),
    ({"feature_columns": "f0"}, "feature_columns must be a list of column names"),
    ({"output_table": "x;y"}, "output_table='x;y' is not allowed"),
    ({"run_name": "a b"}, "run_name='a b'"),
    ({"standardize": "yes"}, "standardize must be true or false"),
    ({"colour": "red"}, "unknown parameter 'colour'"),
])
def test_each_bad_parameter_is_named(overrides, message):
    with pytest.raises(LwecInputError) as raised:
        ConsensusRequest(**{**REQUIRED, **overrides})
    assert message in str(raised.value)


def test_run_key_depends_on_what_decides_the_labels_only():
    base = ConsensusRequest(**REQUIRED)
    assert base.run_key == ConsensusRequest(**{**REQUIRED, "database_url": "sqlite:///other.db"}, experiment="x",
                                            chunk_size=7, tracking_uri="sqlite:///m.db").run_key
    assert base.run_key != ConsensusRequest(**REQUIRED, theta=0.5).run_key
    assert ConsensusRequest(**REQUIRED, run_name="nightly").run_key == "nightly"


def test_cli_options_cover_every_parameter_with_the_model_defaults():
    args = build_parser().parse_args(["run", "--database-url", "sqlite:///x.db", "--table", "t", "-k", "3"])
    from lwec_tasks.cli.request_options import request_parameters

    parameters = request_parameters(args)
    assert set(parameters) == set(ConsensusRequest.model_fields)
    assert ConsensusRequest(**parameters) == ConsensusRequest(**REQUIRED)


def test_served_deployments_come_from_the_one_definition():
    import sys

    sys.path.insert(0, str(PROJECT_ROOT / "deployments"))
    try:
        import serve
    finally:
        sys.path.pop(0)
    config = yaml.safe_load((PROJECT_ROOT / "deployments" / "prefect.yaml").read_text())
    defined = {d["name"]: d for d in config["deployments"]}
    served = serve.build_deployments({"table": "other"}, cron="* * * * *")
    assert {d.name for d in served} == set(defined)
    nightly = next(d for d in served if d.name == "nightly")
    assert nightly.parameters == {**defined["nightly"]["parameters"], "table": "other"}
    assert [s.schedule.cron for s in nightly.schedules] == ["* * * * *"]
    on_demand = next(d for d in served if d.name == "on-demand")
    assert on_demand.parameters == defined["on-demand"]["parameters"] and not on_demand.schedules
    assert on_demand.description == defined["on-demand"]["description"]


@pytest.mark.parametrize("given, expected", [("auto", "auto"), ("AUTO", "auto"), (" Auto ", "auto"), ("7", 7),
                                             (5, 5)])
def test_n_clusters_takes_an_integer_or_auto(given, expected):
    request = ConsensusRequest(**{**REQUIRED, "n_clusters": given})
    assert request.n_clusters == expected
    assert request.auto_k is (expected == "auto")


def test_the_ui_form_offers_auto_next_to_an_integer_k():
    from prefect.utilities.callables import parameter_schema

    schema = parameter_schema(consensus_flow.fn).model_dump()["properties"]["n_clusters"]
    kinds = schema["anyOf"]
    assert kinds[0]["type"] == "integer" and schema["minimum"] == 2  # the bound beside the alternatives
    assert any(kind.get("enum") == ["auto"] for kind in kinds)


@pytest.mark.parametrize("bad", ["automatic", "3.5", 1, None])
def test_n_clusters_names_what_it_accepts(bad):
    with pytest.raises(LwecInputError, match="n_clusters"):
        ConsensusRequest(**{**REQUIRED, "n_clusters": bad})


def test_auto_k_runs_on_a_dask_cluster_too():
    request = ConsensusRequest(**{**REQUIRED, "n_clusters": "auto", "dask_address": "tcp://127.0.0.1:8786"})
    assert request.auto_k and request.dask_address == "tcp://127.0.0.1:8786"


def test_run_name_placeholders_give_each_scheduled_night_its_own_key():
    from datetime import UTC, datetime, timedelta, timezone

    request = ConsensusRequest(**REQUIRED, run_name="nightly-{date}")
    night = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)
    assert request.scheduled_at(night).run_key == "nightly-2026-11-23"
    assert request.scheduled_at(night + timedelta(days=1)).run_key == "nightly-2026-11-24"
    # a scheduled start given in another zone is keyed by its UTC date
    tokyo = timezone(timedelta(hours=9))
    assert request.scheduled_at(datetime(2026, 11, 24, 8, 0, tzinfo=tokyo)).run_key == "nightly-2026-11-23"
    with_time = ConsensusRequest(**REQUIRED, run_name="hourly-{datetime}")
    assert with_time.scheduled_at(night).run_key == "hourly-2026-11-23T0200"
    plain = ConsensusRequest(**REQUIRED, run_name="fixed")
    assert plain.scheduled_at(night) is plain


@pytest.mark.parametrize("name", ["nightly-{day}", "nightly-{date", "a b"])
def test_bad_run_names_are_refused_naming_the_placeholders(name):
    with pytest.raises(LwecInputError, match=r"run_name.*\{date\}"):
        ConsensusRequest(**REQUIRED, run_name=name)


def test_cli_reads_k_auto():
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    args = run_parser.parse_args(["--database-url", "sqlite:///x.db", "--table", "t", "-k", "auto"])
    assert args.n_clusters == "auto"
    args = run_parser.parse_args(["--database-url", "sqlite:///x.db", "--table", "t", "-k", "4", "--no-stable-ids",
                                  "--keep-runs", "none"])
    assert args.n_clusters == 4 and args.stable_ids is False and args.keep_runs is None
