"""The competent one-model script that ``python -m benchmarks competent`` times against the whole ``lwec run``.

    python benchmarks/competent_script.py DATABASE_URL TABLE OUTPUT_TABLE [--features f0,f1,...]

What a practitioner who knows the tools would write to cluster a database table once:

1. read ``id`` and the feature columns as one Arrow table through ADBC (PostgreSQL: the
   ``adbc-driver-postgresql`` driver, binary ``COPY``): ``cursor.execute("SELECT ...")``,
   ``fetch_arrow_table()``;
2. standardise each column (z-score, in place on one float64 matrix);
3. fit one scikit-learn ``KMeans(n_clusters=20, n_init=3, random_state=0)`` on a seeded
   100,000-row sample (``numpy.random.default_rng(0)``, without replacement);
4. ``predict`` every row, 1,000,000 rows at a time;
5. write ``(id bigint primary key, label integer)`` with ADBC ``adbc_ingest``: on PostgreSQL the
   table is created by the ingestion (binary ``COPY`` into an unindexed table) and the primary key
   is added afterwards (``ALTER TABLE ... ADD PRIMARY KEY``, one index build); SQLite cannot add a
   primary key to an existing table, so there the table is created with its key first and the rows
   appended. Then one commit.

Prints one line ``RESULT {json}`` with the seconds of each step. Only the standard scientific stack
(numpy, pyarrow, scikit-learn) and the ADBC driver are imported: nothing of lwec.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

FEATURES = [f"f{j}" for j in range(16)]
K = 20
N_INIT = 3
SEED = 0
SAMPLE_ROWS = 100_000
PREDICT_CHUNK = 1_000_000


def adbc_connect(database_url: str):
    """An ADBC DB-API connection for a SQLAlchemy-style URL (``postgresql+psycopg://...`` or ``sqlite:///...``)."""
    scheme, _, rest = database_url.partition("://")
    if scheme.startswith("postgresql"):
        import adbc_driver_postgresql.dbapi

        return adbc_driver_postgresql.dbapi.connect(f"postgresql://{rest}")  # libpq's URI: no "+driver"
    if scheme.startswith("sqlite"):
        import adbc_driver_sqlite.dbapi

        return adbc_driver_sqlite.dbapi.connect(rest[1:] if rest.startswith("/") else rest)
    raise SystemExit(f"unsupported database URL scheme {scheme!r} (PostgreSQL or SQLite)")


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def run(database_url: str, table: str, output_table: str, features: list[str]) -> dict:
    import numpy as np
    import pyarrow as pa
    from sklearn.cluster import KMeans

    seconds = {}
    mark = time.perf_counter()
    connection = adbc_connect(database_url)
    is_postgres = database_url.startswith("postgresql")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, {', '.join(quote(f) for f in features)} FROM {quote(table)}")
        arrow = cursor.fetch_arrow_table()
    ids = arrow.column("id").to_numpy()
    X = np.empty((arrow.num_rows, len(features)), dtype=np.float64)
    for j, name in enumerate(features):
        X[:, j] = arrow.column(name).to_numpy()
    del arrow
    seconds["read"] = time.perf_counter() - mark

    mark = time.perf_counter()
    X -= X.mean(axis=0)
    X /= X.std(axis=0)
    seconds["standardise"] = time.perf_counter() - mark

    mark = time.perf_counter()
    n = len(X)
    sample = np.random.default_rng(SEED).choice(n, min(SAMPLE_ROWS, n), replace=False)
    model = KMeans(n_clusters=K, n_init=N_INIT, random_state=SEED).fit(X[sample])
    seconds["fit"] = time.perf_counter() - mark

    mark = time.perf_counter()
    labels = np.empty(n, dtype=np.int32)
    for start in range(0, n, PREDICT_CHUNK):
        labels[start:start + PREDICT_CHUNK] = model.predict(X[start:start + PREDICT_CHUNK])
    seconds["predict"] = time.perf_counter() - mark
    del X

    mark = time.perf_counter()
    rows = pa.table({"id": pa.array(ids, pa.int64()), "label": pa.array(labels, pa.int32())})
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {quote(output_table)}")
        if is_postgres:
            cursor.adbc_ingest(output_table, rows, mode="create")
            cursor.execute(f"ALTER TABLE {quote(output_table)} ADD PRIMARY KEY (id)")
        else:
            cursor.execute(f"CREATE TABLE {quote(output_table)} (id INTEGER PRIMARY KEY, label INTEGER)")
            cursor.adbc_ingest(output_table, rows, mode="append")
    connection.commit()
    connection.close()
    seconds["write"] = time.perf_counter() - mark
    return {"rows": int(n), "seconds": {key: round(value, 3) for key, value in seconds.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database_url")
    parser.add_argument("table")
    parser.add_argument("output_table")
    parser.add_argument("--features", default=",".join(FEATURES), help="comma-separated (default f0..f15)")
    args = parser.parse_args(argv)
    result = run(args.database_url, args.table, args.output_table, args.features.split(","))
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
