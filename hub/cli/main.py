"""`searchhub serve | init | check | doctor | search | engines | mcp | classify`, and `--version`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

from .. import config as cfgmod


def _add_config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="path to engines.json (default, first found: $SEARCHHUB_CONFIG, ./engines.json, "
                                    "~/.config/searchhub/engines.json, the built-in default)")


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("searchhub")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="searchhub", description="LLM gateway with server-side web search")
    parser.add_argument("--version", action="version", version=f"searchhub {version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gateway")
    _add_config(serve)
    serve.add_argument("--host", help="listen address (default: server.host in engines.json)")
    serve.add_argument("--port", type=int, help="listen port (default: server.port in engines.json)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (share state via Redis)")
    serve.add_argument("--log-format", choices=["auto", "text", "json"], default="auto",
                       help="log lines as text for people or JSON for collectors (auto: text on a terminal)")

    init = sub.add_parser("init", help="write an editable copy of the built-in config (never overwrites)")
    init.add_argument("--path", default=cfgmod.CONFIG_NAME,
                      help="where to write it (default: ./%(default)s; the user config dir is "
                           "~/.config/searchhub/engines.json)")

    check = sub.add_parser("check", help="validate engines.json and print the resolved routing table")
    _add_config(check)

    doctor = sub.add_parser("doctor", help="try each provider and engine once; print what works and what to fix")
    _add_config(doctor)
    doctor.add_argument("--query", default="weather today", help="the engines' probe query (default: %(default)s)")
    doctor.add_argument("--timeout", type=float, default=10.0, help="seconds for each probe (default: %(default)s)")

    search = sub.add_parser("search", help="run one web search with the configured engines")
    _add_config(search)
    search.add_argument("query")
    search.add_argument("--engine", help="engine id (default: the default engine)")
    search.add_argument("--count", type=int, help="number of results")
    search.add_argument("--recency", choices=["oneDay", "oneWeek", "oneMonth", "oneYear", "noLimit"])
    search.add_argument("--json", action="store_true", help="print the normalized result as JSON")

    engines = sub.add_parser("engines", help="list the configured search engines (--probe: search with each)")
    _add_config(engines)
    engines.add_argument("--probe", action="store_true", help="run one live search on every engine")
    engines.add_argument("--query", default="weather today", help="the probe's query (default: %(default)s)")
    engines.add_argument("--json", action="store_true", help="print the engines as JSON")

    mcp = sub.add_parser("mcp", help="serve the web_search tool as an MCP server over stdio")
    _add_config(mcp)

    classify = sub.add_parser("classify", help="show the web-search decision for a text or a whole request")
    classify.add_argument("text", nargs="?", help="a user text (intent only)")
    classify.add_argument("--request", metavar="FILE",
                          help="a request body or recorded fixture (JSON; '-' reads stdin): side request, client "
                               "search tool and intent, with reasons")
    classify.add_argument("--protocol", choices=["auto", "chat", "messages", "responses"], default="auto")
    _add_config(classify)
    return parser


Serve = Callable[..., int]


def main(argv: list[str] | None = None, *, serve: Serve | None = None) -> int:
    """Run a command; `serve` is passed in by the HTTP layer (routes/serve.py), which hub/ never imports."""
    args = build_parser().parse_args(argv)
    try:
        code = _run(args, serve)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`searchhub classify ... | head`): stop quietly, like other Unix tools.
        # stdout is pointed at /dev/null so the interpreter's last flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by a closed pipe
    return code


def locate(args: argparse.Namespace) -> str:
    """The config path for a command, logged on stderr with where it came from (stdout is the
    command's own: a table, JSON or the MCP protocol)."""
    where = cfgmod.locate(getattr(args, "config", None))
    print(f"searchhub: using {where.describe()}", file=sys.stderr)
    return where.path


def _run(args: argparse.Namespace, serve: Serve | None) -> int:
    if args.command == "init":
        return _init(args.path)
    if args.command == "check":
        return _check(args)
    if args.command == "serve":
        if serve is None:
            print("searchhub: 'serve' runs from the searchhub program (python -m routes serve)", file=sys.stderr)
            return 2
        return serve(cfgmod.locate(args.config), host=args.host, port=args.port, workers=args.workers,
                     log_format=args.log_format)
    if args.command in ("search", "engines", "mcp", "doctor"):
        path = locate(args)
        cfg = load_config(path)
        if cfg is None:
            return 1
        if args.command == "search":
            from .search import run_search

            return run_search(args, cfg, path)
        if args.command == "engines":
            from .search import run_engines

            return run_engines(args, cfg, path)
        if args.command == "doctor":
            from .doctor import run_doctor

            return run_doctor(cfg, path, query=args.query, timeout_s=args.timeout)
        from ..mcp.stdio import run_stdio

        return run_stdio(args, cfg, path)
    if args.command == "classify":
        return _classify(args)
    return 2  # pragma: no cover - argparse rejects unknown commands


def _init(path: str) -> int:
    """Write the built-in config to `path` for editing; an existing file is never touched."""
    text = cfgmod.BUILTIN_CONFIG.read_text(encoding="utf-8")
    # The copy's "$schema" points at the installed schema, so an editor can check it wherever it lives.
    text = text.replace('"./hub/config/engines.schema.json"', json.dumps(cfgmod.SCHEMA_PATH.resolve().as_uri()), 1)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "x", encoding="utf-8") as f:  # "x": fails if the file exists, atomically
            f.write(text)
    except FileExistsError:
        print(f"searchhub init: {path} already exists; it was left as it is (remove it or pass --path)",
              file=sys.stderr)
        return 1
    except OSError as e:
        print(f"searchhub init: cannot write {path}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {path}: edit it (providers, routes, engines; docs/configuration.md), check it with "
          f"`searchhub check --config {path}`, then run `searchhub serve`")
    return 0


def _classify(args: argparse.Namespace) -> int:
    from ..injection.intent import classify, describe

    if args.request is None:
        if args.text is None:
            print("searchhub classify: give a text or --request FILE", file=sys.stderr)
            return 2
        print(describe(classify(args.text)))
        return 0
    from ..core.errors import GatewayError
    from ..injection.report import report

    rules: tuple = ()
    tool_name = "web_search"
    if args.config:  # operator rules and the tool name; without --config the built-in rules only
        cfg = load_config(args.config)
        if cfg is None:
            return 1
        rules, tool_name = cfg.web_search.side_requests.rules, cfg.web_search.tool_name
    try:
        raw = sys.stdin.read() if args.request == "-" else open(args.request, encoding="utf-8").read()
        print(report(raw, protocol=args.protocol, rules=rules, tool_name=tool_name))
    except (OSError, ValueError, GatewayError) as e:  # unreadable file, bad JSON, a request we would reject
        print(f"searchhub classify: {e}", file=sys.stderr)
        return 1
    return 0


def load_config(path: str) -> cfgmod.Config | None:
    """The config, or None after printing every error (with its JSON path) to stderr."""
    from ..runtime import load_config as load  # with the search engines it may name (hub/search/registry.py)

    try:
        return load(path)
    except cfgmod.ConfigError as e:
        print(f"{path}: invalid configuration", file=sys.stderr)
        for err in e.errors:
            print(f"  {err}", file=sys.stderr)
        return None


def _check(args: argparse.Namespace) -> int:
    path = locate(args)
    cfg = load_config(path)
    if cfg is None:
        return 1
    print(f"{path}: OK")
    print(json.dumps(cfg.routing_table(), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
