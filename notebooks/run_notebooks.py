#!/usr/bin/python3
"""Runs the notebooks headless on data that shardsim writes, and checks that each wrote its figures.

    run_notebooks.py --shardsim build/shardsim --out build/notebooks

makes OUT/data (a sweep, a run's memory timeline and trace, the validation table, a search), executes every
notebook with `jupyter nbconvert --execute` into OUT/executed, and expects its figures in OUT/figures.
Exit 0: all ran and wrote their figures; 1: one failed; 77: Debian's python3-matplotlib, python3-pandas or
jupyter-nbconvert is not installed (the test is then skipped).
"""
import argparse
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent

# Each notebook and the figures it must write.
NOTEBOOKS = {
    "scaling.ipynb": ["scaling.png", "bytes_per_level.png", "time_breakdown.png"],
    "memory_timeline.ipynb": ["memory_over_time.png", "timeline.png"],
    "validation.ipynb": ["validation_scatter.png", "validation_error_by_set.png"],
    "explore_plan.ipynb": ["search_plans.png", "plan_breakdown.png"],
}


def data_commands(shardsim, data):
    """The shardsim commands whose outputs the notebooks read (each notebook's first cell names its own)."""
    return [
        [shardsim, "sweep", "scenarios/frontier_gpt20b_partitioning.yaml", "-o", str(data / "sweep"), "-j", "2"],
        [shardsim, "run", "scenarios/frontier_gpt20b_zero3.yaml", "--memory-csv", str(data / "memory.csv"),
         "--trace", str(data / "trace.json")],
        [shardsim, "validate", "--csv", str(data / "validation.csv")],
        [shardsim, "search", "scenarios/search_llama13b_1024.yaml", "--top", "100", "--json", str(data / "search.json")],
    ]


def missing_tools():
    missing = [m for m in ("matplotlib", "pandas", "nbconvert", "ipykernel") if importlib.util.find_spec(m) is None]
    return missing


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardsim", required=True, help="the shardsim binary")
    ap.add_argument("--out", required=True, help="folder for data, executed notebooks and figures (emptied first)")
    ap.add_argument("--only", nargs="*", help="run only these notebooks")
    args = ap.parse_args()

    missing = missing_tools()
    if missing:
        print(f"skipped: {', '.join(missing)} not installed for {sys.executable} (Debian: python3-matplotlib "
              "python3-pandas jupyter-nbconvert python3-ipykernel; `make deps` installs them)")
        return 77

    out = pathlib.Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    data, executed, figures = out / "data", out / "executed", out / "figures"
    for d in (data, executed, figures):
        d.mkdir(parents=True)
    shardsim = str(pathlib.Path(args.shardsim).resolve())
    for cmd in data_commands(shardsim, data):
        r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            print(f"FAILED (exit {r.returncode}): {' '.join(cmd)}\n{r.stderr}")
            return 1

    # Jupyter's, IPython's and matplotlib's own files under OUT too: nothing depends on a writable home.
    home = out / "home"
    env = dict(os.environ, SHARDSIM_NB_DATA=str(data), SHARDSIM_NB_FIGURES=str(figures), MPLBACKEND="Agg",
               JUPYTER_RUNTIME_DIR=str(home / "jupyter-runtime"), JUPYTER_DATA_DIR=str(home / "jupyter-data"),
               JUPYTER_CONFIG_DIR=str(home / "jupyter-config"), IPYTHONDIR=str(home / "ipython"),
               MPLCONFIGDIR=str(home / "matplotlib"), JUPYTER_PLATFORM_DIRS="1")
    failed = []
    for name, expected in NOTEBOOKS.items():
        if args.only and name not in args.only:
            continue
        cmd = [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", "--output-dir", str(executed),
               "--ExecutePreprocessor.timeout=300", str(HERE / name)]
        r = subprocess.run(cmd, cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            failed.append(name)
            print(f"FAILED: {name} (exit {r.returncode})\n{r.stdout[-4000:]}")
            continue
        for fig in expected:
            path = figures / fig
            ok = path.is_file() and path.stat().st_size > 5000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            if not ok:
                failed.append(f"{name}: {fig}")
                print(f"FAILED: {name} did not write the figure {path}")
        if name not in failed:
            print(f"ok: {name} -> {', '.join(expected)}")
    if failed:
        return 1
    print(f"figures in {figures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
