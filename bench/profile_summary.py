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


_WRITES = {"StreamWriter._writelines", "StreamWriter._write", "RequestResponseCycle.send"}
_LAYERS = (("httpx_aiohttp/", "httpx-aiohttp transport"), ("httpx/", "httpx"), ("aiohttp/", "aiohttp"),
           ("uvicorn/", "uvicorn"), ("starlette/", "starlette"), ("prometheus_client/", "prometheus_client"),
           ("hub/", "searchhub (hub/, routes/)"), ("routes/", "searchhub (hub/, routes/)"),
           ("multidict/", "aiohttp"), ("yarl/", "aiohttp"), ("msgspec", "msgspec"), ("anyio/", "anyio"))


def layer_of(frames: list[tuple[str, str]]) -> str:
    """The layer a sample's CPU belongs to: socket writes and the event loop by the leaf frame; stdlib
    helpers (asyncio tasks aside) to the nearest non-stdlib caller."""
    fn, file = frames[-1]
    if fn in _WRITES:
        return "socket writes (kernel send, any layer)"
    if fn == "Runner.run":
        return "event loop (uvloop, C)"
    for _fn, file in reversed(frames):
        file = file.removeprefix("stdlib/")
        if file.startswith("asyncio/") or file == "_weakrefset.py":
            return "asyncio tasks/futures"
        for marker, name in _LAYERS:
            if file.startswith(marker):
                return name
    return "other (" + frames[-1][1] + ")"


def layers(path: str) -> tuple[Counter, int]:
    out: Counter = Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            try:
                n = int(count)
            except ValueError:
                continue
            frames = [(m["fn"], short_file(m["file"])) for fr in stack.split(";")
                      if (m := _FRAME.match(fr)) and not fr.startswith(("process ", "thread "))]
            if frames:
                out[layer_of(frames)] += n
                total += n
    return out, total


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
    ap.add_argument("--layers", action="store_true", help="only the CPU split by layer (httpx, aiohttp, ...)")
    args = ap.parse_args(argv)
    if args.layers:
        c, total = layers(args.profile)
        print(f"| layer | % | ms/req |  ({total} samples)" if args.cpu_ms_per_req else f"| layer | % | ({total} samples)")
        print("|---|---|---|" if args.cpu_ms_per_req else "|---|---|")
        for k, n in c.most_common():
            ms = f" {args.cpu_ms_per_req * n / total:.3f} |" if args.cpu_ms_per_req else ""
            print(f"| {k} | {100 * n / total:.1f} |{ms}")
        return 0
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
