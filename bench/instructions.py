"""Instructions per request: `bench/inprocess.py` under valgrind, a count that host noise cannot move.

On a shared, noisy machine a 5% change to the gateway's code hides in the CPU-time spread; the
number of instructions the process executes does not. This runs `inprocess.py` (same flags) under
valgrind's cachegrind with the cache simulation off (~15 s a run), at two request counts, and
reports (I refs(long) - I refs(short)) / (requests(long) - requests(short)): startup, imports and
the warm-up cancel out. The fake backend runs outside valgrind. Instructions are not time (cache
misses are not counted), so quote them beside a timed run, not instead of one.

  apt-get install -y valgrind
  .venv/bin/python bench/instructions.py --search --stream                 # the working tree
  .venv/bin/python bench/instructions.py --search --stream --checkout /tmp/other   # another tree
  .venv/bin/python bench/instructions.py --repeat 3 --search --stream --protocol messages
  FAKE_CHUNKS=40 .venv/bin/python bench/instructions.py --stream   # the fake's settings (bench/fake_backend.py)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
IREFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def irefs(checkout: Path, requests: int, flags: list[str]) -> int:
    """I refs of one `inprocess.py --rounds 1 --requests N` run in `checkout`."""
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
           "--trace-children=no", sys.executable, str(checkout / "bench" / "inprocess.py"),
           "--rounds", "1", "--requests", str(requests), *flags]
    # numpy's OpenBLAS starts a worker thread per core at import (hub/search/passages.py imports it);
    # idle, they spin for a while, and valgrind counts their instructions with the process's: one
    # thread keeps the count to the gateway's own work (±1 % between repeats instead of ±8 %)
    blas = {name: os.environ.get(name, "1") for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True, timeout=900,
                         env={**os.environ, **blas, "PYTHONPATH": str(checkout)})
    m = IREFS.search(out.stderr)
    if out.returncode != 0 or m is None:
        raise SystemExit(f"valgrind run failed (rc {out.returncode}):\n{out.stderr[-2000:]}")
    return int(m.group(1).replace(",", ""))


def executed(requests: int) -> int:
    """Requests inprocess.py makes with --rounds 1: one warm-up call, min(200, N) more, then N."""
    return 1 + min(200, requests) + requests


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", type=Path, default=BENCH.parent,
                    help="the tree whose gateway to count (its bench/inprocess.py runs)")
    ap.add_argument("--short", type=int, default=50, help="requests in the short run")
    ap.add_argument("--long", type=int, default=250, help="requests in the long run")
    ap.add_argument("--repeat", type=int, default=1, help="repeat the pair (the count barely moves)")
    args, flags = ap.parse_known_args(argv)
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (apt-get install -y valgrind)")
    n = executed(args.long) - executed(args.short)
    # bytecode compiled during one run of the pair would count as that run's requests
    subprocess.run([sys.executable, "-m", "compileall", "-q", "hub", "routes", "bench"], cwd=args.checkout, check=True)
    for _ in range(args.repeat):
        per = (irefs(args.checkout, args.long, flags) - irefs(args.checkout, args.short, flags)) / n
        print(f"{per / 1000:8.1f} k instructions/request  ({args.checkout}, {' '.join(flags) or 'plain relay'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
