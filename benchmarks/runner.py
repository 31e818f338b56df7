"""Plan the benchmark cases, run each in its own subprocess, print one table."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.data import PROJECT_ROOT, pool_available
from benchmarks.options import resolve_scale_n

LARGE_LWEA_SPEC = "synthetic:70000:10:30"  # ~50,000 microclusters
HUGE_LWEA_SPEC = "synthetic:300000"  # ~300,000 microclusters: exact LWEA from cluster counts, no refusal
#: The k-means comparison runs on the scale ensemble up to this many objects.
KMEANS_MAX_N = 1_000_000
KMEANS_KS = (10, 30)


@dataclass
class Case:
    ensemble: str  # display name
    spec: str  # load_ensemble spec
    step: str  # what is timed
    name: str  # case name in benchmarks.cases
    repeats: int
    reference_of: str | None = None  # name of the project case this one is the reference for
    result: dict = field(default_factory=dict)
    labels_path: str | None = None


def kmeans_cases(ensemble: str, spec: str, graphs: tuple[str, ...], repeats: int) -> list[Case]:
    """The final k-means of LWGP (and HBGF) alone: the package's vs scikit-learn's, per k."""
    cases = []
    for graph in graphs:
        for k in KMEANS_KS:
            step = f"{graph.upper()} k-means k={k}"
            ours = f"kmeans-lwec-{graph}-k{k}"
            cases += [
                Case(ensemble, spec, step, ours, repeats),
                Case(ensemble, spec, step, f"kmeans-sklearn-{graph}-k{k}", repeats, ours),
            ]
    return cases


def plan(args) -> list[Case]:
    cases: list[Case] = []
    for pool in args.pools:
        if not pool_available(pool):
            print(f"# pool {pool} not found (set LWEC_POOLS_DIR); skipped", file=sys.stderr)
            continue
        spec = f"pool:{pool}"
        cases += [
            Case(pool, spec, "ECI", "project-eci", 5),
            Case(pool, spec, "ECI", "reference-eci", 2, "project-eci"),
            Case(pool, spec, "LWEA k=2..30", "project-lwea", 3),
        ]
        if args.full or pool != "LR":
            cases.append(Case(pool, spec, "LWEA k=2..30", "reference-lwea", 0, "project-lwea"))
        cases += [
            Case(pool, spec, "LWGP k=2..30", "project-lwgp", 3),
            Case(pool, spec, "LWGP k=2..30", "reference-lwgp", 0, "project-lwgp"),
            Case(pool, spec, "LWGP k=10", "project-lwgp-k10", 3),
        ]
        cases += kmeans_cases(pool, spec, ("lwgp", "hbgf"), 5)
    scale_n = resolve_scale_n(args)
    if scale_n:
        spec = f"synthetic:{scale_n}"
        label = f"synthetic N={scale_n:,}"
        cases.append(Case(label, spec, "ECI + LWGP k=10", "project-scale", 1))
        if args.full:
            cases.append(Case(label, spec, "ECI + LWGP k=10", "reference-scale", 0, "project-scale"))
        if scale_n <= KMEANS_MAX_N:
            cases += kmeans_cases(label, spec, ("lwgp",), 1)
    if args.full:
        cases.append(Case("synthetic N=70,000", LARGE_LWEA_SPEC, "LWEA k=2..30", "project-lwea-large", 0))
        cases.append(Case("synthetic N=300,000", HUGE_LWEA_SPEC, "LWEA k=10", "lwea-at-scale", 0))
    cases.append(Case("blobs N=20,000 d=16", "-", "base clusterings M=10", "generate", 0))
    return cases


def run(case: Case, workdir: Path, env: dict) -> None:
    out = workdir / f"{len(os.listdir(workdir))}-{case.name}.npy"
    command = [sys.executable, "-m", "benchmarks.child", case.name, case.spec, str(case.repeats), str(out)]
    # The suite is not an installed package: the children find it from the project root.
    completed = subprocess.run(command, capture_output=True, text=True, env=env, cwd=PROJECT_ROOT)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    if completed.returncode != 0 or not lines:
        case.result = {"error": (completed.stderr.strip().splitlines() or ["failed"])[-1]}
        return
    case.result = json.loads(lines[-1][len("RESULT "):])
    case.labels_path = str(out) if out.exists() else None


def _partitions_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same partition up to renaming (a one-to-one label correspondence)."""
    pairs = np.unique(np.column_stack([a, b]), axis=0)
    return len(pairs) == len(np.unique(a)) == len(np.unique(b))


def compare(project: Case, reference: Case) -> str:
    if not (project.labels_path and reference.labels_path):
        return ""
    ours, theirs = np.load(project.labels_path), np.load(reference.labels_path)
    if project.name.endswith("lwea"):
        same = sum(_partitions_equal(ours[:, j], theirs[:, j]) for j in range(ours.shape[1]))
        return f"cuts identical {same}/{ours.shape[1]}"
    return ""


def machine_description(env: dict) -> str:
    import numba
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    blas = [f"{i.get('internal_api')} {i.get('architecture') or ''}".strip() for i in threadpool_info()
            if i.get("user_api") == "blas"]
    openblas_env = {k: v for k, v in env.items() if k.startswith("OPENBLAS_")}
    load = os.getloadavg()
    return (
        f"{cpu}, {os.cpu_count()} cores, {memory:.1f} GiB RAM; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"scikit-learn {sklearn.__version__}, numba {numba.__version__}; BLAS {', '.join(blas)}; "
        f"OPENBLAS_* in the cases' environment: {openblas_env or 'none'}; "
        f"load average at start {load[0]:.1f}"
    )


def _fmt(value, digits=3) -> str:
    if value is None:
        return "–"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def table(cases: list[Case]) -> str:
    by_name = {(c.ensemble, c.name): c for c in cases}
    header = (
        "| ensemble | step | implementation | N | Ñ | cold s | warm s | peak MB | ref / ours | check |\n"
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|"
    )
    rows = [header]
    for case in cases:
        r = case.result
        if "error" in r:
            rows.append(f"| {case.ensemble} | {case.step} | {case.name} | | | | | | | error: {r['error']} |")
            continue
        implementation = "reference" if case.name.startswith("reference") else "lwec"
        if case.name.startswith("kmeans-sklearn"):
            implementation = "scikit-learn"
        best = r.get("warm_s") if r.get("warm_s") is not None else r.get("cold_s")
        ratio, check = "", ""
        if case.reference_of:
            project = by_name.get((case.ensemble, case.reference_of))
            if project and "error" not in project.result:
                ours = project.result.get("warm_s") or project.result.get("cold_s")
                ratio = f"{best / ours:.0f}×" if best / ours >= 10 else f"{best / ours:.1f}×"
                check = compare(project, case)
        if "nmi" in r:
            check = (check + "; " if check else "") + f"NMI@{r['truth_k']} {r['nmi']:.3f}"
        if "inertia" in r:
            check = f"k-means on {r['rows']:,} rows; weighted inertia {r['inertia']:.1f}"
        if "message" in r:
            check = r["message"].replace("|", "/")
        rows.append(
            f"| {case.ensemble} | {case.step} | {implementation} | {r.get('objects', ''):,} | "
            f"{r.get('microclusters', '') and format(r['microclusters'], ',')} | {_fmt(r.get('cold_s'))} | "
            f"{_fmt(r.get('warm_s'))} | {r.get('peak_mb', 0):,.0f} | {ratio} | {check} |"
        )
    return "\n".join(rows)


def main(args) -> int:
    env = dict(os.environ)
    if args.unset_openblas_env:
        for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            env.pop(key, None)
    cases = plan(args)
    if args.repeats is not None:
        for case in cases:
            case.repeats = min(case.repeats, args.repeats)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lwec-bench-") as workdir:
        for case in cases:
            print(f"# running {case.ensemble}: {case.step} ({case.name})", file=sys.stderr, flush=True)
            run(case, Path(workdir), env)
            print(f"#   {case.result}", file=sys.stderr, flush=True)
        report = "\n".join(
            [
                f"Machine: {machine_description(env)}",
                "",
                table(cases),
                "",
                f"Total benchmark time {time.perf_counter() - started:.0f} s.",
            ]
        )
    print(report)
    if args.output:
        Path(args.output).write_text(report + "\n")
    return 0 if all("error" not in c.result for c in cases) else 1
