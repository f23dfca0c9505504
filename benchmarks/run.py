"""Run every benchmark in this folder: ``python benchmarks/run.py``."""

import pathlib
import runpy
import sys

here = pathlib.Path(__file__).resolve().parent
for path in sorted(here.glob("bench_*.py")):
    print(f"\n== {path.name} ==", flush=True)
    sys.argv = [str(path)]
    runpy.run_path(str(path), run_name="__main__")
