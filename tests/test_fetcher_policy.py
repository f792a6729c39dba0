"""Which URLs may be fetched (pure policy, no network) and the URL parser under hostile input."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hub import config as cfgmod
from hub.fetcher import AddressPolicy, DomainRules, UrlPolicy, build, normalize, redact, urls_in_text
from hub.fetcher.addresses import parse_ip
from hub.fetcher.result import INVALID_TOOL_INPUT, URL_NOT_ALLOWED, URL_NOT_IN_PRIOR_CONTEXT, URL_TOO_LONG
from hub.fetcher.urls import DEFAULT_PORTS, Target, check, parse
from hub.runtime import PLUGINS
from hub.store import MemoryStore


def target(url: str) -> Target:
    t = parse(url)
    assert isinstance(t, Target), t
    return t


# -- domain lists --------------------------------------------------------------------------------

def test_domains_cover_subdomains_but_not_lookalikes():
    rules = DomainRules.build(allowed=["example.com"])
    assert rules.refuses("example.com", "client") is None
    assert rules.refuses("docs.example.com", "client") is None
    for host in ("notexample.com", "example.com.evil.net", "example.co"):
        r = rules.refuses(host, "client")
        assert r is not None and r.code == URL_NOT_ALLOWED and r.reason == "domain_not_allowed"


def test_allowed_entry_with_a_path_never_matches_but_a_blocked_one_blocks_the_domain():
    assert DomainRules.build(allowed=["example.com/docs"]).refuses("example.com", "client") is not None
    assert DomainRules.build(blocked=["example.com/private"]).refuses("example.com", "client").reason == "domain_blocked"


def test_entries_are_normalized_like_urls():
    rules = DomainRules.build(allowed=["https://Docs.Example.COM/", "*.wiki.org", "bücher.de"])
    assert rules.allowed == ("docs.example.com", "wiki.org", "xn--bcher-kva.de")
    assert rules.refuses(target("https://BÜCHER.de/x").host, "client") is None


def test_operator_block_wins_over_client_allow_and_both_allow_lists_apply():
    policy = UrlPolicy(DomainRules.build(allowed=["example.com", "example.org"], blocked=["bad.example.com"]),
                       require_prior_context=False)
    scope = policy.scope(allowed_domains=["example.com"])
    assert scope.check(target("https://www.example.com/")) is None
    assert scope.check(target("https://bad.example.com/")).reason == "domain_blocked"
    assert scope.check(target("https://example.org/")).reason == "domain_not_allowed"  # client narrows
    assert scope.check(target("https://example.net/")).message.endswith("operator's allowed domains")


# -- only URLs from the conversation ----------------------------------------------------------------

def test_urls_seen_in_text_and_search_results_may_be_fetched_exactly():
    scope = UrlPolicy().scope()
    scope.remember_text("Read https://Example.com:443/a/b?x=1#top, then (http://news.test/p).")
    scope.remember_url("https://hits.example/result")
    assert scope.check(target("https://example.com/a/b?x=1")) is None
    assert scope.check(target("HTTPS://EXAMPLE.COM/a/b?x=1#other")) is None  # case, port, fragment
    assert scope.check(target("http://news.test/p")) is None
    assert scope.check(target("https://hits.example/result")) is None
    for changed in ("https://example.com/a/b?x=2", "https://example.com/a/b", "https://example.com/a/B?x=1",
                    "http://example.com/a/b?x=1", "https://attacker.example/?d=https://example.com/a/b?x=1"):
        r = scope.check(target(changed))
        assert r is not None and r.code == URL_NOT_IN_PRIOR_CONTEXT, changed


def test_conversation_urls_come_from_user_and_tool_messages_only():
    scope = UrlPolicy().scope()
    scope.remember_messages([
        {"role": "system", "content": "Docs live at https://system.example/"},
        {"role": "user", "content": [{"type": "text", "text": "compare https://a.example/x"},
                                     {"type": "image_url", "image_url": {"url": "https://img.example/i.png"}}]},
        {"role": "assistant", "content": "I will open https://made-up.example/secret?d=1",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "web_search", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1",
         "content": '{"results":[{"n":1,"url":"https://hit.example/page?id=7","title":"t"}]}'},
    ])
    assert scope.known == {"https://a.example/x", "https://hit.example/page?id=7"}


def test_prior_context_rule_can_be_turned_off():
    assert UrlPolicy(require_prior_context=False).scope().check(target("https://anywhere.example/")) is None


def test_urls_in_text():
    assert urls_in_text("see <https://a.example/x>, and https://b.example/y). Also http://c.example/z?q=1!") == [
        "https://a.example/x", "https://b.example/y", "http://c.example/z?q=1"]
    assert urls_in_text("no links here") == []


url_text = st.from_regex(r"https?://[a-z]{1,10}(\.[a-z]{2,6}){1,2}(:[0-9]{2,4})?(/[A-Za-z0-9._~%-]{0,12}){0,3}"
                         r"(\?[a-z]=[A-Za-z0-9]{0,6})?", fullmatch=True)


@settings(max_examples=200)
@given(url=url_text, before=st.text(max_size=20), after=st.sampled_from(["", ".", ",", " and more", ")", "!"]))
def test_a_url_mentioned_anywhere_in_text_is_recognized(url, before, after):
    scope = UrlPolicy().scope()
    scope.remember_text(f"{before} {url}{after}")
    t = parse(url)
    if isinstance(t, Target) and t.path.rstrip(".,;:!?*_~'\"") == t.path:
        assert scope.check(t) is None


# -- the parser ---------------------------------------------------------------------------------------

def test_parser_rules():
    assert parse("ftp://example.com/").code == INVALID_TOOL_INPUT
    assert parse("javascript:alert(1)").code == INVALID_TOOL_INPUT
    assert parse("https://example.com/" + "a" * 250).code == URL_TOO_LONG
    assert parse("http://0x7f.1/").reason == "ip_encoding"
    assert parse("http://2130706433/").code == URL_NOT_ALLOWED
    assert parse("http://exa mple.com/").code == INVALID_TOOL_INPUT
    assert parse("http://example.com\\@evil.com/").code == INVALID_TOOL_INPUT
    assert parse("http://exam%70le.com/").code == INVALID_TOOL_INPUT
    assert check(target("http://a@example.com/"), frozenset({80, 443})).reason == "credentials"
    assert check(target("http://example.com:8080/"), frozenset({80, 443})).reason == "port"
    assert check(target("http://example.com:8080/"), frozenset({8080})) is None
    assert target("http://example.com.:80/").url == "http://example.com/"
    assert target("http://[::FFFF:127.0.0.1]/").host == "::ffff:7f00:1"


@settings(max_examples=500)
@given(st.text(max_size=300))
def test_parser_never_raises_and_hosts_are_clean(raw):
    t = parse(raw)
    if isinstance(t, Target):
        assert t.scheme in ("http", "https") and t.host
        assert not any(c in t.host for c in "@%/\\ \t\r\n?#")
        assert normalize(t.url) == t.url  # the normal form is a fixed point


any_url = st.one_of(
    url_text,
    st.builds("{}://{}{}{}".format, st.sampled_from(["http", "HTTPS"]),
              st.sampled_from(["", "u@", "u:p@"]),
              st.sampled_from(["example.com", "[::1]", "[::ffff:10.0.0.1]", "10.0.0.1", "bücher.de", "EXAMPLE.com.",
                               "a.b.c.example", "xn--bcher-kva.de"]),
              st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40).map(lambda p: "/" + p)),
)


@settings(max_examples=400)
@given(any_url)
def test_the_host_checked_is_the_host_httpx_connects_to(raw):
    """The fetcher hands httpx its own normalized URL; httpx must read the same host and port from it."""
    t = parse(raw)
    if not isinstance(t, Target):
        return
    u = httpx.URL(t.url)
    assert u.raw_host.decode("ascii") == t.host and (u.port or DEFAULT_PORTS[t.scheme]) == t.port and u.scheme == t.scheme
    assert not u.userinfo


@settings(max_examples=300)
@given(url=url_text, secret=st.from_regex(r"_[A-Za-z0-9]{8,16}", fullmatch=True))
def test_redacted_urls_hold_no_query_or_credentials(url, secret):
    assume(secret not in url)  # a path may spell the same characters; only what we add must go
    with_secret = url.replace("://", f"://user:{secret}@", 1) + ("&" if "?" in url else "?") + f"token={secret}"
    assert secret not in redact(with_secret)
    assert secret not in redact(url + ("&" if "?" in url else "?") + f"token={secret}")


# -- the webFetch config section ------------------------------------------------------------------

def _config(web_fetch: dict | None = None) -> cfgmod.Config:
    raw = {"providers": {"local": {"type": "vllm", "baseURL": "http://127.0.0.1:1"}},
           "virtualrouter": {"routing": {"default": [{"targets": ["local.m"]}]}}}
    if web_fetch is not None:
        raw["webFetch"] = web_fetch
    return cfgmod.build(raw, {}, plugins=PLUGINS)


def test_web_fetch_defaults_refuse_everything_non_public():
    wf = _config().web_fetch
    assert (wf.allow_private, wf.allow_hosts, wf.allow_ports, wf.require_prior_context) == (False, (), (80, 443), True)
    fetcher, policy = build(wf, MemoryStore())
    assert fetcher.addresses == AddressPolicy()
    assert policy.require_prior_context and fetcher.limits.max_bytes == 5 * 1024 * 1024


def test_web_fetch_section_is_built_and_checked():
    wf = _config({"allowPrivate": True, "allowHosts": ["wiki.corp", "10.9.0.0/16"], "allowPorts": [443, 8443],
                  "blockedDomains": ["bad.example"], "requirePriorContext": False, "timeoutMs": 2000}).web_fetch
    fetcher, policy = build(wf, MemoryStore())
    assert fetcher.limits.allowed_ports == frozenset({443, 8443}) and fetcher.limits.timeout_s == 2
    assert fetcher.addresses.refuses("wiki.corp", parse_ip("127.0.0.1")) is None
    assert policy.domains.blocked == ("bad.example",) and not policy.require_prior_context
    with pytest.raises(cfgmod.ConfigError) as e:
        _config({"allowHosts": ["10.0.0.0/99"]})
    assert "webFetch.allowHosts[0]" in str(e.value.errors)
    with pytest.raises(cfgmod.ConfigError):
        _config({"allowPorts": [0]})
    with pytest.raises(cfgmod.ConfigError):
        _config({"allowPrivat": True})  # a misspelt key is an error, not a silent default
