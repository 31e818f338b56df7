"""Command-line options generated from :class:`~lwec_tasks.request.ConsensusRequest`.

``lwec run`` and ``deployments/serve.py`` both call :func:`add_request_options`,
so every flow parameter has one option, with the model's description as help.
"""

from __future__ import annotations

import argparse
import types
import typing

from lwec_tasks.cli import csv_list
from lwec_tasks.core.defaults import AUTO, is_auto
from lwec_tasks.methods import PIPELINE_METHODS
from lwec_tasks.request import ConsensusRequest

#: Spellings that differ from ``--<field-name-with-dashes>``.
FLAGS = {
    "n_clusters": ("-k", "--n-clusters"),
    "feature_columns": ("--features",),
    "ensemble_size": ("-M", "--ensemble-size"),
    "standardize": ("--no-standardize",),
    "stable_ids": ("--no-stable-ids",),
}


def number_of_clusters(text: str) -> int | str:
    """``-k``: an integer, or "auto" to choose k from the ensemble."""
    return AUTO if is_auto(text) else int(text)


def _optional_int(text: str) -> int | None:
    return None if text.lower() in ("none", "random", "") else int(text)


def _base_type(annotation) -> tuple[type, bool]:
    """(the non-None type of ``annotation``, whether None is allowed)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return typing.get_origin(members[0]) or members[0], True
    return typing.get_origin(annotation) or annotation, False


def add_request_options(parser: argparse.ArgumentParser, *, required: tuple[str, ...] = (),
                        only_given: bool = False) -> None:
    """One option per request field; ``required`` fields must be given.

    Defaults are the model's, or, with ``only_given``, absent from the parsed
    namespace unless the option was given (for overriding stored parameters).
    """
    for name, field in ConsensusRequest.model_fields.items():
        flags = FLAGS.get(name, (f"--{name.replace('_', '-')}",))
        default = argparse.SUPPRESS if only_given else field.default
        options: dict = {"dest": name, "default": default, "help": field.description}
        kind, optional = _base_type(field.annotation)
        if kind is bool:
            options["action"] = "store_false" if field.default else "store_true"
            if field.default:
                options["help"] = f"turn off (on by default): {field.description}"
        else:
            if name in required:
                options.update(required=True, default=argparse.SUPPRESS)
            if name == "method":
                options["choices"] = PIPELINE_METHODS
            elif name == "n_clusters":
                options.update(type=number_of_clusters, metavar="{K,auto}")
            elif kind is tuple:
                options.update(type=csv_list, help=f"{field.description} (comma-separated)")
            elif kind is int:
                options["type"] = _optional_int if optional else int
            elif kind is float:
                options["type"] = float
        if "default" in options and options["default"] not in (None, argparse.SUPPRESS) and kind is not bool:
            options["help"] += f" (default: {options['default']})"
        parser.add_argument(*flags, **options)


def request_parameters(args: argparse.Namespace) -> dict:
    """The request fields present in ``args`` (all of them unless parsed with ``only_given``)."""
    return {name: getattr(args, name) for name in ConsensusRequest.model_fields if hasattr(args, name)}
