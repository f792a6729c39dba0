"""Web-search intent: decide from the latest user text whether to offer the web_search tool.

Rules (docs/intent.md): Chinese rules are substring matches, English rules match whole words
case-insensitively. Hard hits always count; soft hits are dropped when the text reads like a
code/file/shell request, because coding agents "search" and "find" constantly without meaning the web.
Every word list and regex is compiled once at import; a call only runs a handful of searches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core.text import text_of

# A long message is an ask wrapped around pasted material (logs, code, docs). The ask sits at the
# start ("search the web for this: <paste>") or the end ("<paste> google this error"); the middle is
# where false soft hits live, and scanning it would make the hot path grow with the paste.
SCAN_HEAD = 1_000
SCAN_TAIL = 3_000

REMINDER_OPEN = "<system-reminder>"
REMINDER_CLOSE = "</system-reminder>"


@dataclass(frozen=True, slots=True)
class Intent:
    search: bool  # web-search intent detected
    google: bool  # Google-preferred
    language: str | None  # "zh" | "en" | None
    rule: str | None  # "zh-hard", "zh-soft-shangwang", "zh-soft-verb-noun", "en-hard", "en-soft" or None
    reason: str  # which rule hit with which words, or why nothing did
    baidu: bool = False  # the ask was 百度一下 (Google-preferred unless webSearch.baiduPreference says baidu)


# --- Chinese: plain substring checks -------------------------------------------------------------

ZH_BAIDU = "百度一下"
ZH_HARD = ("谷歌搜索", "谷歌一下", ZH_BAIDU)  # all three are Google-preferred, as the design says
ZH_SHANGWANG = "上网"
ZH_VERBS = ("搜索", "查找", "搜")
ZH_NOUNS = ("网络", "联网", "新闻", "信息", "报道")
ZH_GOOGLE = "谷歌"
# Code/dev nouns that turn a Chinese soft hit into a local search ("查找返回用户信息的函数").
ZH_CODE_NOUNS = (
    "代码", "源码", "文件", "函数", "方法名", "类名", "变量", "模块", "仓库", "目录", "脚本",
    "日志", "组件", "字段", "报错", "堆栈", "数据库", "单元测试", "测试用例", "项目里", "项目中",
    "网络请求", "搜索框", "搜索栏", "搜索功能",
)  # fmt: skip

# --- English: regexes, run on the lower-cased text ---------------------------------------------

# ASCII mode: word boundaries treat Han characters as non-letters, so "用google搜索" still holds
# the word "google". Patterns are case-sensitive and run on text.lower(): sre tries every branch of
# an IGNORECASE alternation at every position, which is several times slower.
_FLAGS = re.ASCII


def _phrases(*phrases: str) -> str:
    """Alternation of phrases whose spaces match any run of whitespace."""
    return "|".join(p.replace(" ", r"\s+") for p in phrases)


@dataclass(frozen=True, slots=True)
class _Gated:
    """A regex run only when one of its literal keys occurs in the text.

    `in` scans at memchr speed; a regex alternation costs tens of nanoseconds per character even
    when nothing matches, and most texts contain none of the keys.
    """

    keys: tuple[str, ...]
    regex: re.Pattern[str]

    def search(self, text: str) -> re.Match[str] | None:
        if not self.keys:
            return self.regex.search(text)
        for key in self.keys:  # a plain loop: any() over a generator costs more than the scans
            if key in text:
                return self.regex.search(text)
        return None


EN_HARD_PHRASES = (
    "/search",
    "web[- ]?search(?:es|ing)?",
    "internet[- ]?search(?:es|ing)?",
    "online search(?:es)?",
    "google search(?:es)?",
    "search(?:ing)? (?:on |in )?the (?:web|internet|net)",
    "search(?:ing)? (?:web|internet)",
    # "online" as an adjective of data ("search online users") is not the web.
    "search(?:ing)? online(?! (?:users?|players?|members?|customers?|orders?|accounts?|status)\\b)",
    # Google's own products are not web search.
    "search(?:ing)? (?:on |with |using |via )?google(?! (?:drive|docs|sheets|mail|calendar|photos)\\b)",
    "look(?:ing)? (?:it |this |that |them |these |those )?up (?:online|on the (?:web|internet|net))",
    "look(?:ing)? online",
    "(?:browse|browsing|surf|surfing) the (?:web|internet|net)",
    "google (?:it|that|this(?! (?:year|week|month|quarter|morning|time)\\b))",
)
# Not glued to a path, file name, identifier or backtick: "api/search", "websearch.py",
# "web_search", "`web search`" name things in code; "research the web" is not "search the web".
_EN_HARD = _Gated(
    ("search", "look", "google", "brows", "surf"),
    re.compile(r"(?<![\w/.`-])(?:" + _phrases(*EN_HARD_PHRASES) + r")(?![\w/`-]|[.?]\w)", _FLAGS),
)
# "google一下" / "Google 搜索" are how 谷歌一下 / 谷歌搜索 are often typed; same rule, same preference.
_ZH_HARD_MIXED = _Gated(("google",), re.compile(r"(?<![a-z0-9_])google\s*(?:一下|搜索)", _FLAGS))
_EN_VERB = _Gated(
    ("search", "find", "look", "googl"),
    re.compile(
        r"(?<![\w-])(?:"
        + _phrases(
            "search(?:ing)?",
            "find(?:ing)?",
            "look(?:ing)? (?:(?:it|this|that|them|these|those) )?up",
            "look(?:ing)? for",
            "googl(?:e|ing)",
        )
        + r")(?![\w-])",
        _FLAGS,
    ),
)
_EN_NOUN = _Gated(
    ("web", "internet", "online", "news", "info", "report", "article"),
    re.compile(r"\b(?:web|internet|online|news|information|info|reports?|articles?)\b", _FLAGS),
)
_GOOGLE = _Gated(("googl", ZH_GOOGLE), re.compile(r"\bgoogl(?:e|ing|ed)\b|" + ZH_GOOGLE, _FLAGS))

# Signals that a text is about code, files or a shell; they only ever veto soft hits. Each is
# (kind, runs on the original rather than the lower-cased text, gated regex), cheapest first.
_FILE_EXTENSIONS = (
    "py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|json|jsonl|ya?ml|toml|ini|cfg|conf|env|md|rst|txt|csv|tsv|xml|"
    "html?|css|scss|sh|bash|zsh|ps1|bat|rs|go|java|kt|scala|c|h|cc|cpp|hpp|cs|rb|php|swift|sql|lock|"
    "log|vue|svelte|dart|lua|pl|jl|ex|exs|hs|ml|tf|proto|gradle"
)
_CODE_NOUNS = _phrases(
    "files?", "filenames?", "functions?", "methods?", "repos?", "monorepos?", "repository", "repositories",
    "codebases?", "directory", "directories", "dirs?", "folders?", "modules?", "variables?", "vars?", "src",
    "workspace", "snippets?", "commits?", "diffs?", "usages", "components?", "logs?", "logfiles?",
    "stack\\s*traces?", "tracebacks?", "class(?:es)?", "tests", "(?:unit|integration|e2e|failing|flaky) tests?",
    "test (?:files?|suites?|cases?)", "source code", "databases?",
    # Naming a developer tool means a local search, whatever the other words are.
    "git", "grep", "ripgrep", "rg", "sed", "awk", "regexp?", "regex(?:es)?",
    # Ambiguous words count only in their code-ish forms ("tax code", "the Manhattan Project").
    "(?:this|that|the|my|our|your) (?:code|project|test)", r"lines? \d+", "line numbers?",
    # "search" as a noun naming a UI or API part, not as a request.
    "search (?:bar|box|field|input|button|endpoint|api|index|component|page|results? page)",
)  # fmt: skip
_CODE_SIGNALS: tuple[tuple[str, bool, _Gated], ...] = (
    ("backtick", False, _Gated(("`",), re.compile("`"))),
    (
        "syntax",
        False,
        _Gated(
            ("==", "!=", "=>", "::", "{", "}", "<"),
            re.compile(r"==|!=|=>|::|[{}]|</?[A-Za-z][\w-]*>", _FLAGS),
        ),
    ),
    # ./x, ../x, ~/x, /usr/lib/..., src/ - but not the path part of a URL.
    (
        "path",
        False,
        _Gated(
            ("/",),
            re.compile(
                r"(?<![\w:/.])(?:\.{1,2}|~)/[\w.-]|(?<![\w:/.])/[\w.-]+/"
                r"|(?<![\w/.-])\w[\w.-]+/(?=[\s\"'`),;:]|$)",
                _FLAGS,
            ),
        ),
    ),
    # utils.py, src/news_feed.tsx. Lower-case extensions only ("D.C." is not a C file), and
    # "Node.js"-style product names are not files.
    (
        "filename",
        True,
        _Gated(
            (".",),
            re.compile(
                r"(?<![\w/.:-])(?![A-Z][a-z]*\.js\b)[\w/.-]*\w\.(?:" + _FILE_EXTENSIONS + r")\b", _FLAGS
            ),
        ),
    ),
    # snake_case, SCREAMING_CASE, __dunder__.
    ("identifier", False, _Gated(("_",), re.compile(r"\b\w*[a-z0-9]_[a-z0-9]\w*\b|\b__\w+__\b", _FLAGS))),
    ("call", False, _Gated(("(",), re.compile(r"\b[a-z_]\w*\((?!s\))[^()]*\)", _FLAGS))),
    (
        "member access",
        False,
        _Gated(("self.", "this.", "cls."), re.compile(r"\b(?:self|this|cls)\.\w", _FLAGS)),
    ),
    # A shell prompt or a command at a line start, a command-line flag, a pipe into a filter, &&.
    (
        "shell",
        False,
        _Gated(
            (),
            re.compile(
                r"(?m:^)[ \t]*(?:\$[ \t]+\S|(?:git|grep|egrep|rg|ag|ack|fd|ls|sed|awk|npm|npx|pnpm|yarn"
                r"|pip3?|uv|pytest|cargo|docker|kubectl|jq|sudo|curl|wget|cd)[ \t])",
                _FLAGS,
            ),
        ),
    ),
    ("shell", False, _Gated(("-",), re.compile(r"(?<!\S)--?[a-z][\w-]*", _FLAGS))),
    (
        "shell",
        False,
        _Gated(
            ("|", "&&"),
            re.compile(r"\|[ \t]*(?:grep|rg|head|tail|sort|uniq|wc|xargs|less|jq|awk|sed)\b|&&", _FLAGS),
        ),
    ),
    # camelCase with two lower-case letters first, so "iPhone" and "macOS" stay prose.
    ("identifier", True, _Gated((), re.compile(r"\b[a-z]{2,}[A-Z][a-z0-9]\w*\b", _FLAGS))),
    ("code noun", False, _Gated((), re.compile(r"\b(?:" + _CODE_NOUNS + r")\b", _FLAGS))),
)
_HAN = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")


def strip_system_reminders(text: str) -> str:
    """Remove complete <system-reminder>...</system-reminder> blocks (Claude Code harness text).

    Each closing tag pairs with the nearest opening tag before it, so an unclosed tag earlier in
    the text (typed by a user, say) never swallows the user's words. Linear in the text length.
    """
    if REMINDER_OPEN not in text:
        return text
    pieces: list[str] = []
    pos = 0
    while True:
        close = text.find(REMINDER_CLOSE, pos)
        if close < 0:
            break
        start = text.rfind(REMINDER_OPEN, pos, close)
        if start < 0:
            # A stray closing tag: keep it as text and look further.
            pieces.append(text[pos : close + len(REMINDER_CLOSE)])
        else:
            pieces.append(text[pos:start])
        pos = close + len(REMINDER_CLOSE)
    pieces.append(text[pos:])
    # Joined with spaces so words on either side of a block stay separate words; stripped so a block
    # at either end leaves no trace.
    return " ".join(pieces).strip()


def _window(text: str) -> str:
    if len(text) <= SCAN_HEAD + SCAN_TAIL:
        return text
    return text[:SCAN_HEAD] + "\n" + text[-SCAN_TAIL:]


def _first(haystack: str, needles: tuple[str, ...]) -> str | None:
    for needle in needles:
        if needle in haystack:
            return needle
    return None


@dataclass(frozen=True, slots=True)
class _Hit:
    rule: str
    language: str
    words: str  # for the reason, e.g. 'verb "find" + noun "news"'


def _hard_hit(low: str) -> _Hit | None:
    phrase = _first(low, ZH_HARD)
    if phrase is not None:
        return _Hit("zh-hard", "zh", f'phrase "{phrase}"')
    m = _ZH_HARD_MIXED.search(low)
    if m is not None:
        return _Hit("zh-hard", "zh", f'phrase "{m.group(0)}"')
    shell: str | None = None
    if _EN_HARD.search(low) is not None:
        for m in _EN_HARD.regex.finditer(low):
            if not _in_shell_arguments(low, m.start()):
                return _Hit("en-hard", "en", f'phrase "{m.group(0)}"')
            shell = shell or m.group(0)
    if shell is not None:  # only ever as a command's argument: the text is about that command
        return _Hit(_SHELL_RULE, "en", f'phrase "{shell}"')
    return None


# A hard phrase among a shell command's arguments (`rg 'search online' src/`, `$ grep -r "web search" .`)
# is a pattern being looked for in files, not a request to search the web. The command starts its line,
# a backtick span, or follows a prompt, `;`, `|`, `&&`, `(` or "run"; its arguments run to the phrase.
_SHELL_ARGUMENTS = re.compile(
    r"(?:^|[`;|&(]|\$[ \t]|\b(?:run|execute|try|ran|tried)[ \t])[ \t]*(?:sudo[ \t]+)?(?:git[ \t]+grep|grep|egrep|fgrep|rg|ag|ack|sed|awk|find|fd"
    r"|echo|printf|curl|wget|jq|ls|cat|python3?|node|npx|npm|pytest|cargo|go)[ \t][^`\n;|&]*$",
    _FLAGS | re.M,
)


_SHELL_RULE = "shell"


def _in_shell_arguments(low: str, start: int) -> bool:
    line_start = low.rfind("\n", 0, start) + 1
    return _SHELL_ARGUMENTS.search(low, line_start, start) is not None


def _soft_hit(low: str) -> _Hit | None:
    if ZH_SHANGWANG in low:
        return _Hit("zh-soft-shangwang", "zh", f'word "{ZH_SHANGWANG}"')
    verb = _first(low, ZH_VERBS)
    if verb is not None:
        noun = _first(low, ZH_NOUNS)
        if noun is not None:
            return _Hit("zh-soft-verb-noun", "zh", f'verb "{verb}" + noun "{noun}"')
    verb_m = _EN_VERB.search(low)
    if verb_m is not None:
        noun_m = _EN_NOUN.search(low)
        if noun_m is not None:
            return _Hit("en-soft", "en", f'verb "{verb_m.group(0)}" + noun "{noun_m.group(0)}"')
    return None


def _code_context(text: str, low: str) -> str | None:
    """Why the text reads as a code/file/shell request, or None."""
    noun = _first(low, ZH_CODE_NOUNS)
    if noun is not None:
        return f'code noun "{noun}"'
    for kind, on_original, signal in _CODE_SIGNALS:
        m = signal.search(text if on_original else low)
        if m is not None:
            return f'{kind} "{m.group(0).strip()}"'
    return None


def _script(text: str) -> str | None:
    if _HAN.search(text):
        return "zh"
    if _LATIN.search(text):
        return "en"
    return None


def classify(text: str) -> Intent:
    """Classify one user text; never raises, same text gives the same Intent."""
    # Stripped before windowing so surrounding whitespace never shifts the window.
    scanned = _window(strip_system_reminders(text).strip())
    if not scanned:
        return Intent(False, False, None, None, "no user text (after removing system-reminder blocks)")
    low = scanned.lower()

    hit = _hard_hit(low)
    if hit is not None and hit.rule == _SHELL_RULE:
        return Intent(False, False, hit.language, None, f"en-hard ({hit.words}) suppressed: inside a shell command")
    if hit is None:
        hit = _soft_hit(low)
        if hit is not None:
            why = _code_context(scanned, low)
            if why is not None:
                reason = f"{hit.rule} ({hit.words}) suppressed: code context, {why}"
                return Intent(False, False, hit.language, None, reason)
    if hit is None:
        return Intent(False, False, _script(scanned), None, "no rule matched")

    reason = f"{hit.rule}: {hit.words}"
    baidu = False
    if hit.rule == "zh-hard":
        google = True
        baidu = hit.words == f'phrase "{ZH_BAIDU}"'
        reason += "; Google-preferred by rule" + (" (or Baidu, when configured)" if baidu else "")
    else:
        google_m = _GOOGLE.search(low)
        google = google_m is not None
        if google_m is not None:
            reason += f'; Google-preferred: "{google_m.group(0)}"'
    return Intent(True, google, hit.language, hit.rule, reason, baidu)


def latest_user_text(messages: list[dict[str, Any]]) -> str | None:
    """Text of the latest user message that carries user text (text parts joined with newlines).

    A message whose only text is system-reminder blocks carries no user text: Claude Code sends such
    messages after tool results, and the question being worked on is in an earlier message.
    """
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        text = text_of(message.get("content"))
        if strip_system_reminders(text).strip():
            return text
    return None


def describe(intent: Intent) -> str:
    """Multi-line report for `searchhub classify`."""
    decision = "web search" if intent.search else "no web search"
    return "\n".join(
        (
            f"decision:         {decision}",
            f"google-preferred: {'yes' if intent.google else 'no'}",
            f"language:         {intent.language or '-'}",
            f"rule:             {intent.rule or '-'}",
            f"reason:           {intent.reason}",
        )
    )
