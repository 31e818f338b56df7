"""Text NULLs missing at random against NULLs that mark a group, through the whole flow, automatic and given k.

    python -m benchmarks.null_levels [--json FILE]

Nine SQLite tables of 2,400 rows: 3–5 groups of unit spread in three numeric columns around centres drawn
N(0, 3²), a text column naming each group, a boolean with 10 % noise, 5 % numeric gaps. In six the text
column's NULLs fall on 5–20 % of the rows at random; in three they are exactly the last group (which has no
other value). Each table is run with ``n_clusters="auto"`` and with its true k (LWEA, seed 0); printed: the k
found and the NMI against the groups. Results: docs/decisions.md (*Text and boolean NULLs: a level, or
unknown*).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa

from benchmarks.flow_study import report_flow_study

#: (seed, groups, share of NULLs at random; 0: the NULLs are the last group)
TABLES = ((0, 3, 0.05), (1, 4, 0.10), (2, 5, 0.15), (3, 3, 0.20), (4, 4, 0.05), (5, 5, 0.10),
          (10, 3, 0.0), (11, 4, 0.0), (12, 5, 0.0))


def null_table(seed: int, k: int, null_share: float, n: int = 2400) -> tuple[pd.DataFrame, np.ndarray]:
    """(the table, its groups (n,)): see the module docstring; ``null_share`` 0 puts the NULLs on the last group."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    frame = pd.DataFrame(rng.normal(0, 3.0, (k, 3))[y] + rng.normal(0, 1.0, (n, 3)), columns=["a", "b", "c"])
    city = np.array([f"city{g}" for g in range(k)], dtype=object)[y]
    city[(y == k - 1) if null_share == 0 else (rng.random(n) < null_share)] = None
    frame["city"] = city
    frame["plan"] = np.where(rng.random(n) < 0.9, y % 2 == 0, y % 2 == 1)
    frame.loc[rng.random(n) < 0.05, "b"] = np.nan
    return frame, y


def study(workdir: Path) -> list[dict]:
    """One row per table and k given ("auto" or the true k): the k found and the NMI."""
    from flows.consensus import consensus_flow

    url, tracking = f"sqlite:///{workdir / 'tables.db'}", f"sqlite:///{workdir / 'mlflow.db'}"
    engine = sa.create_engine(url)
    rows = []
    for seed, k, share in TABLES:
        frame, y = null_table(seed, k, share)
        name = f"nulls_{seed}"
        frame.insert(0, "id", np.arange(len(frame)))
        frame.assign(truth=y).to_sql(name, engine, index=False, if_exists="replace")
        for n_clusters in ("auto", k):
            summary = consensus_flow(database_url=url, table=name, id_column="id", label_column="truth",
                                     n_clusters=n_clusters, seed=0, tracking_uri=tracking, experiment="null-levels",
                                     stable_ids=False)
            rows.append({"nulls": f"{share:.0%} at random" if share else "the last group", "true k": k,
                         "given": str(n_clusters), "k": summary["k"], "nmi": summary["nmi"],
                         "null treatment": summary["categorical_columns"]["city"].get("nulls")})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    """One line per table: its NULLs, the true k, automatic k's k and NMI, the NMI at the true k."""
    lines = ["| NULLs | true k | treated as | auto k | NMI at auto k | NMI at the true k |",
             "|---|---:|---|---:|---:|---:|"]
    for auto, fixed in zip(rows[::2], rows[1::2]):
        lines.append(f"| {auto['nulls']} | {auto['true k']} | {auto['null treatment']} | {auto['k']} | "
                     f"{auto['nmi']:.3f} | {fixed['nmi']:.3f} |")
    random = [row["nmi"] for row in rows[::2] if row["nulls"] != "the last group"]
    lines.append(f"| **mean over the random NULLs** | | | | **{np.mean(random):.3f}** | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.null_levels", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    return report_flow_study(study, markdown, args.json)


if __name__ == "__main__":
    sys.exit(main())
