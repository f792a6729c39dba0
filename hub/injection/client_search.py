"""Does a client's own tool search the web? Then searchhub stands back and injects nothing.

Coding agents carry many tools with "search" in their names that never leave the machine
(`grep_search`, `tool_search`, `file_search`, `codebase_search`, `search_files`). A tool counts as
a web search tool only by what it is: a name that pairs a search word with a web word or a search
service (`web_search`, `WebSearch`, `google_search`, `search_web`, `brave_search`), or a description
that says it searches the web or the internet. Word lists are compiled once at import.
"""

from __future__ import annotations

import re

from ..core.text import text_of

# Words that put a search on the web: the medium, or a search service by name.
_WEB_WORDS = frozenset({
    "web", "internet", "online", "www", "google", "bing", "brave", "duckduckgo", "ddg", "tavily", "exa",
    "serper", "serpapi", "searx", "searxng", "perplexity", "kagi", "jina", "baidu", "yandex",
    "websearch", "googlesearch", "bingsearch",
})  # fmt: skip
_SEARCH_WORDS = frozenset({"search", "searches", "searching", "lookup", "query", "find", "websearch",
                           "googlesearch", "bingsearch"})
# Words that make a search local whatever else the name says ("web_file_search" is still a file search).
_LOCAL_WORDS = frozenset({
    "grep", "file", "files", "code", "codebase", "repo", "repository", "tool", "tools", "symbol", "symbols",
    "memory", "memories", "glob", "path", "paths", "directory", "dir", "workspace", "project", "history",
    "session", "sessions", "vector", "semantic", "doc", "docs", "notes", "email", "mail", "issue", "issues",
})  # fmt: skip
# A name that is a search service on its own: a tool called "google" or "tavily" searches the web.
_SERVICE_NAMES = frozenset({"google", "bing", "brave", "duckduckgo", "ddg", "tavily", "exa", "serper",
                            "serpapi", "searxng", "perplexity", "kagi", "websearch", "googlesearch"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_DESCRIPTION = re.compile(
    r"\bsearch(?:es|ing)?\s+(?:on\s+|across\s+)?(?:the\s+)?(?:web|internet|online)\b"
    r"|\b(?:web|internet|online)[ -]?search(?:es)?\b|\bsearch\s+engines?\b"
    r"|\blook(?:s|ing)?\s+up\s+\w+(?:\s+\w+)?\s+(?:on\s+the\s+)?(?:web|internet|online)\b",
    re.I,
)
_DESCRIPTION_HEAD = 400  # what a tool is, is said first; long usage notes mention the web in passing


def name_words(name: str) -> list[str]:
    """`WebSearch` -> [web, search]; `search_web-v2` -> [search, web, 2]; lower case."""
    return [w.lower() for w in _WORD.findall(name)]


_VERDICTS: dict[tuple[str, str | None], bool] = {}  # clients send the same tools on every request


def is_web_search_tool(name: object, description: object = None) -> bool:
    """True when a client tool with this name (and description) searches the web."""
    if not isinstance(name, str) or not name:
        return False
    head = description[:_DESCRIPTION_HEAD] if isinstance(description, str) else None
    verdict = _VERDICTS.get((name, head))
    if verdict is None:
        verdict = _judged(name, head)
        if len(_VERDICTS) < 4096:
            _VERDICTS[(name, head)] = verdict
    return verdict


def _judged(name: str, description: str | None) -> bool:
    words = name_words(name)
    if not words:
        return False
    joined = "".join(words)
    if _LOCAL_WORDS.intersection(words):
        return False
    if joined in _SERVICE_NAMES:
        return True
    if _SEARCH_WORDS.intersection(words) and _WEB_WORDS.intersection(words):
        return True
    if joined.startswith(("websearch", "googlesearch", "internetsearch")):
        return True
    return description is not None and _DESCRIPTION.search(description) is not None


def tool_identity(tool: object) -> tuple[object, object]:
    """(name, description) of a chat tool (`{"type":"function","function":{...}}`) or a flat one."""
    if not isinstance(tool, dict):
        return None, None
    fn = tool.get("function")
    source = fn if isinstance(fn, dict) else tool
    return source.get("name"), source.get("description")


def client_web_search(tools: object, messages: object, ours: str) -> str | None:
    """The name of the client's own web search tool in a chat request (ours excluded), or None:
    one of its `tools`, or one it has deferred behind a tool loader (Claude Code's ToolSearch lists
    `WebSearch` among "deferred tools" in a system message and loads it on demand)."""
    if not isinstance(tools, list):
        return None
    loaders: list[str] = []
    for tool in tools:
        name, description = tool_identity(tool)
        if name != ours and is_web_search_tool(name, description):
            return name  # type: ignore[return-value]
        if isinstance(name, str) and {"tool", "tools"}.intersection(name_words(name)):
            loaders.append(description if isinstance(description, str) else "")
    if not loaders:
        return None
    # The list arrives in the system prompt, in the loader's description or, with Claude Code, in a
    # system-reminder inside a user message.
    texts = loaders + [text_of(m.get("content"), any_part=True)
                       for m in (messages if isinstance(messages, list) else ()) if isinstance(m, dict) and m.get("role") in ("system", "developer", "user")]
    for name in deferred_tool_names(texts):
        if name != ours and is_web_search_tool(name):
            return name
    return None


_DEFERRED = re.compile(r"deferred tools?", re.I)
_LISTED = re.compile(r'^[ \t]*(?:[-*][ \t]*)?"?([A-Za-z_][\w.-]{0,63})"?[ \t]*(?::.*)?$')
_LIST_LINES = 200


def deferred_tool_names(texts: list[str]) -> list[str]:
    """Names listed one per line (`Name`, `- "name": "what it does"`) after a mention of deferred tools."""
    names: list[str] = []
    for text in texts:
        for m in _DEFERRED.finditer(text):
            lines = text[m.end():].split("\n", _LIST_LINES + 1)[1:_LIST_LINES + 1]
            started = False
            for line in lines:
                hit = _LISTED.match(line)
                if hit is None:
                    if started and not line.strip():
                        break  # the list ended
                    if started:
                        break
                    continue
                started = True
                names.append(hit.group(1))
    return names
