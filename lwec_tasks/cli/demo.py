"""``lwec demo``: the whole pipeline on a dataset that ships with scikit-learn.

Builds a SQLite features table (default: the 1,797 handwritten digits, 64 pixel
features, ground truth 0–9), runs the consensus flow on it with a local MLflow
store, and prints where the results went.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lwec_tasks.cli.request_options import number_of_clusters
from lwec_tasks.core.defaults import DEFAULT_THETA

#: scikit-learn loaders usable by the demo, by name.
DATASETS = ("digits", "iris", "wine", "breast_cancer")
DEFAULT_CLUSTERS = {"digits": 10, "iris": 3, "wine": 3, "breast_cancer": 2}


def build_demo_table(database: Path, dataset: str = "digits", table: str = "digits") -> str:
    """Write ``dataset`` to ``table`` in the SQLite file ``database`` (replacing it); return the URL.

    Columns: ``id`` (primary key, 0..N−1), one float column per feature, ``target``.
    """
    import pandas as pd
    import sklearn.datasets
    import sqlalchemy as sa

    from lwec_tasks.io.connection import opened_engine

    bunch = getattr(sklearn.datasets, f"load_{dataset}")()
    names = [_column_name(name, j) for j, name in enumerate(getattr(bunch, "feature_names", []) or [])]
    if len(names) != bunch.data.shape[1]:
        names = [f"f{j}" for j in range(bunch.data.shape[1])]
    frame = pd.DataFrame(bunch.data.astype(float), columns=names)
    frame.insert(0, "id", range(len(frame)))
    frame["target"] = bunch.target.astype(int)

    url = database_url(database)
    database.touch()  # the file this creates: open_engine refuses one that is not there (a mistyped path)
    columns = [sa.Column("id", sa.Integer, primary_key=True)]
    columns += [sa.Column(name, sa.Float, nullable=False) for name in names]
    columns += [sa.Column("target", sa.Integer, nullable=False)]
    schema = sa.Table(table, sa.MetaData(), *columns)
    with opened_engine(url) as engine, engine.begin() as connection:
        schema.drop(connection, checkfirst=True)
        schema.create(connection)
        connection.execute(sa.insert(schema), frame.to_dict(orient="records"))
    return url


def database_url(database: Path) -> str:
    """The SQLAlchemy URL of the SQLite file ``database`` (an absolute path)."""
    return f"sqlite:///{database.resolve()}"


def _column_name(name: str, j: int) -> str:
    cleaned = "".join(c if c.isalnum() else "_" for c in str(name)).strip("_").lower()
    return cleaned or f"f{j}"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the whole pipeline on a scikit-learn dataset in a local SQLite file",
        description=__doc__.split("\n\n")[1].replace("\n", " "),
    )
    parser.add_argument("--dataset", choices=DATASETS, default="digits", help="scikit-learn dataset (default: digits)")
    parser.add_argument("--database", type=Path, default=Path("lwec_demo.db"),
                        help="SQLite file to create (default: ./lwec_demo.db)")
    parser.add_argument("--tracking-uri", default=None,
                        help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///<cwd>/mlflow.db)")
    parser.add_argument("--method", choices=("lwea", "lwgp"), default="lwea")
    parser.add_argument("-k", "--n-clusters", type=number_of_clusters, default=None, metavar="{K,auto}",
                        help="consensus clusters, or auto (default: the dataset's number of classes)")
    parser.add_argument("-M", "--ensemble-size", type=int, default=10)
    parser.add_argument("--theta", type=float, default=DEFAULT_THETA)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--experiment", default="lwec-demo")
    parser.set_defaults(handler=run_demo, exit_promptly=True)


def run_demo(args: argparse.Namespace) -> int:
    from lwec_tasks.cli.console import report_failure
    from lwec_tasks.cli.prefect_server import start_temporary_server
    from lwec_tasks.cli.run import apply_prefect_defaults, print_outcome, run_checked_flow
    from lwec_tasks.request import ConsensusRequest
    from lwec_tasks.tracking.store import resolve_tracking_uri

    apply_prefect_defaults()
    started = time.perf_counter()
    parameters = dict(database_url=database_url(args.database), table=args.dataset, label_column="target",
                      method=args.method, n_clusters=args.n_clusters or DEFAULT_CLUSTERS[args.dataset],
                      ensemble_size=args.ensemble_size, theta=args.theta, seed=args.seed, experiment=args.experiment,
                      tracking_uri=resolve_tracking_uri(args.tracking_uri))
    ConsensusRequest(**parameters)  # bad parameters fail (in one line, by main) before the table is built
    # The demo's table is its own: Prefect's temporary server can boot while it is built.
    server = start_temporary_server(register_blocks=False)  # the demo's database is a file
    try:
        build_demo_table(args.database, args.dataset, table=args.dataset)
        print(f"Built table {args.dataset!r} in {args.database.resolve()} from scikit-learn's {args.dataset} "
              "dataset")
        try:
            summary = run_checked_flow(parameters, server=server)
        except Exception as error:  # noqa: BLE001 - every failure of the flow is one line, printed last
            return report_failure("demo", error)
    finally:
        if server is not None:
            server.stop()
    print_outcome(summary, parameters, seconds=time.perf_counter() - started)
    return 0
