"""Summarize a py-spy `--format raw` profile (collapsed stacks): the functions and modules that cost
the most, self and inclusive, as % of on-CPU samples and, given the measured CPU ms per request, as
ms per request.

  .venv/bin/pip install py-spy          # bench-only; not a project dependency
  .venv/bin/python bench/run.py --targets gateway --only nonstream --concurrency 16 --rounds 1 \\
      --duration 10 --profile /tmp/gw.txt
  .venv/bin/python bench/profile_summary.py /tmp/gw.txt --cpu-ms-per-req 0.6 [--top 40] [--match hub/]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter

_FRAME = re.compile(r"^(?P<fn>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def short_file(path: str) -> str:
    for marker in ("site-packages/", "/work/main/", "lib/python3."):
        i = path.find(marker)
        if i >= 0:
            path = path[i + len(marker):]
            if marker == "lib/python3.":
                path = "stdlib/" + path.split("/", 1)[-1]
            break
    return path


def parse(path: str) -> tuple[Counter, Counter, Counter, Counter, int]:
    self_fn: Counter = Counter()
    incl_fn: Counter = Counter()
    self_mod: Counter = Counter()
    incl_mod: Counter = Counter()
    total = 0
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            try:
                n = int(count)
            except ValueError:
                continue
            frames = []
            for fr in stack.split(";"):
                m = _FRAME.match(fr)
                if not m or fr.startswith("process ") or fr.startswith("thread "):
                    continue
                frames.append((m["fn"], short_file(m["file"])))
            if not frames:
                continue
            total += n
            fn, file = frames[-1]
            self_fn[f"{fn} ({file})"] += n
            self_mod[file] += n
            for key in {f"{a} ({b})" for a, b in frames}:
                incl_fn[key] += n
            for key in {b for _, b in frames}:
                incl_mod[key] += n
    return self_fn, incl_fn, self_mod, incl_mod, total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile")
    ap.add_argument("--cpu-ms-per-req", type=float, help="measured CPU ms per request, to print ms per request")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--match", help="only list functions/modules whose file contains this (e.g. hub/)")
    args = ap.parse_args(argv)
    self_fn, incl_fn, self_mod, incl_mod, total = parse(args.profile)
    if not total:
        print("no samples", file=sys.stderr)
        return 1

    def show(title: str, c: Counter) -> None:
        print(f"\n## {title} ({total} samples)")
        print("| % | ms/req | where |" if args.cpu_ms_per_req else "| % | where |")
        print("|---|---|---|" if args.cpu_ms_per_req else "|---|---|")
        shown = 0
        for key, n in c.most_common():
            if args.match and args.match not in key:
                continue
            pct = 100 * n / total
            ms = f" {args.cpu_ms_per_req * n / total:.3f} |" if args.cpu_ms_per_req else ""
            print(f"| {pct:5.1f} |{ms} `{key}` |")
            shown += 1
            if shown >= args.top:
                break

    show("self time by module", self_mod)
    show("inclusive time by module", incl_mod)
    show("self time by function", self_fn)
    show("inclusive time by function", incl_fn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
