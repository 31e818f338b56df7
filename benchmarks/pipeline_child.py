"""One pipeline of ``python -m benchmarks pipeline`` in its own process; prints ``RESULT {json}``.

    python -m benchmarks.pipeline_child lwec|naive DATABASE_URL TABLE METHOD K WORKDIR
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

from benchmarks.pipeline import FEATURES


def peak_mb() -> float:
    """Peak resident memory of this process (not of the Prefect server it may start)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_lwec(database_url: str, table: str, method: str, k: int, workdir: str) -> dict:
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from prefect import flow

    from flows.consensus import consensus_flow

    @flow
    def warm_up() -> None:
        """Starts the temporary Prefect server, so the timing below is the flow's own."""

    warm_up()
    started = time.perf_counter()
    summary = consensus_flow(database_url=database_url, table=table, n_clusters=k, label_column="target",
                             method=method, output_table=f"{table}_lwec", experiment="lwec-bench-pipeline",
                             tracking_uri=f"sqlite:///{workdir}/mlflow.db", run_name="bench")
    seconds = time.perf_counter() - started
    stages = dict(summary["timings"])
    stages["mlflow"] = max(seconds - sum(stages.values()), 0.0)  # logging, summary and orchestration
    return {"seconds": seconds, "stages": stages, "nmi": summary["nmi"], "peak_mb": peak_mb(),
            "rows": summary["n_objects"]}


def run_naive(database_url: str, table: str, k: int) -> dict:
    import io

    import pandas as pd
    import sqlalchemy as sa
    from sklearn.cluster import MiniBatchKMeans

    from lwec_tasks import nmi

    engine = sa.create_engine(database_url)
    stages = {}
    started = time.perf_counter()
    source = sa.Table(table, sa.MetaData(), autoload_with=engine)
    frame = pd.read_sql(sa.select(source.c.id, *(source.c[f] for f in FEATURES), source.c.target), engine)
    stages["load"] = time.perf_counter() - started
    mark = time.perf_counter()
    labels = MiniBatchKMeans(n_clusters=k, random_state=0).fit_predict(frame[FEATURES].to_numpy())
    stages["generate"] = time.perf_counter() - mark
    mark = time.perf_counter()
    out = pd.DataFrame({"id": frame["id"].to_numpy(), "label": labels})
    target = sa.Table(f"{table}_naive", sa.MetaData(), sa.Column("id", sa.BigInteger, primary_key=True),
                      sa.Column("label", sa.Integer))
    with engine.begin() as connection:
        target.drop(connection, checkfirst=True)
        target.create(connection)
        if engine.dialect.name == "postgresql":
            buffer = io.StringIO()
            out.to_csv(buffer, index=False, header=False)
            quoted = connection.dialect.identifier_preparer.format_table(target)
            raw = connection.connection.driver_connection
            with raw.cursor() as cursor, cursor.copy(f"COPY {quoted} (id, label) FROM STDIN WITH (FORMAT csv)") as copy:
                copy.write(buffer.getvalue())
        else:
            out.to_sql(target.name, connection, if_exists="append", index=False)
    stages["write"] = time.perf_counter() - mark
    seconds = time.perf_counter() - started
    engine.dispose()
    return {"seconds": seconds, "stages": stages, "peak_mb": peak_mb(), "rows": len(frame),
            "nmi": float(nmi(frame["target"].to_numpy(), labels, normalization="max"))}


def main(argv: list[str]) -> int:
    kind, database_url, table, method, k, workdir = argv
    if kind == "lwec":
        result = run_lwec(database_url, table, method, int(k), workdir)
    else:
        result = run_naive(database_url, table, int(k))
    print("RESULT " + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
