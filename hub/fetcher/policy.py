"""Which URLs a fetch may ask for, before any network access: the operator's and the client's domain
lists, and (by default) only URLs that already appeared in the conversation, the way Anthropic's
web_fetch does it, so a prompt-injected page cannot steer the model into sending data to an
arbitrary URL. Pure: no I/O; the addresses a URL leads to are checked later (connect.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .result import URL_NOT_ALLOWED, URL_NOT_IN_PRIOR_CONTEXT, Refusal
from .urls import Target, canonical_host, normalize, urls_in_text


def domain_entry(value: object) -> tuple[str, bool] | None:
    """A domain-list entry -> (canonical host, whether it named a path); None when unusable.
    'https://Docs.Example.com/x' -> ('docs.example.com', True); '*.example.com' -> ('example.com', False)."""
    if not isinstance(value, str) or not value.strip():
        return None
    v = value.strip().lower()
    if "://" in v:
        v = v.split("://", 1)[1]
    host, slash, rest = v.partition("/")
    host = host.rsplit("@", 1)[-1]
    if host.startswith("[") and "]" in host:
        host = host[1:host.index("]")]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    canonical = canonical_host(host.removeprefix("*."))
    if canonical is None:
        return None
    return canonical, bool(slash and rest.strip("/*"))


def _matches(host: str, domains: Iterable[str]) -> bool:
    return any(host == d or host.endswith("." + d) for d in domains)


@dataclass(frozen=True, slots=True)
class DomainRules:
    """allowed: when non-empty, only these domains and their subdomains; blocked: never these."""

    allowed: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()

    @classmethod
    def build(cls, allowed: Iterable[object] = (), blocked: Iterable[object] = ()) -> DomainRules:
        # web_fetch matches on the domain only: an allowed entry with a path never matches (as in
        # Anthropic's tool); a blocked entry with a path blocks its whole domain (stricter, never looser).
        allow = [e for e in map(domain_entry, allowed or ()) if e is not None]
        block = [e for e in map(domain_entry, blocked or ()) if e is not None]
        a = tuple(dict.fromkeys(d for d, has_path in allow if not has_path))
        if allow and not a:
            a = ("\x00no-domain",)  # every entry named a path: nothing matches, nothing is allowed
        return cls(a, tuple(dict.fromkeys(d for d, _ in block)))

    def refuses(self, host: str, who: str) -> Refusal | None:
        if self.blocked and _matches(host, self.blocked):
            return Refusal(URL_NOT_ALLOWED, "domain_blocked", f"the domain is blocked by the {who}")
        if self.allowed and not _matches(host, self.allowed):
            return Refusal(URL_NOT_ALLOWED, "domain_not_allowed", f"the domain is not in the {who}'s allowed domains")
        return None


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    """The operator's rules, fixed at config load; scope() adds one conversation's."""

    domains: DomainRules = DomainRules()
    require_prior_context: bool = True

    def scope(self, allowed_domains: Iterable[object] = (), blocked_domains: Iterable[object] = ()) -> FetchScope:
        return FetchScope(self, DomainRules.build(allowed_domains, blocked_domains))


@dataclass
class FetchScope:
    """One conversation's view: the operator's policy, the client's domain lists, and the URLs seen
    so far (user and tool text, search results, fetched pages)."""

    policy: UrlPolicy
    client: DomainRules = DomainRules()
    known: set[str] = field(default_factory=set)

    def remember_url(self, url: object) -> None:
        if isinstance(url, str):
            n = normalize(url)
            if n is not None:
                self.known.add(n)

    def remember_text(self, text: object) -> None:
        """Every URL in a user message, a tool result or a fetched page."""
        if isinstance(text, str):
            for url in urls_in_text(text):
                self.remember_url(url)

    def remember_messages(self, messages: Iterable[object]) -> None:
        """The URLs of a conversation in the internal (Chat Completions) form: user messages and
        tool results (search results and fetched pages included), never the model's own text."""
        for m in messages:
            if not isinstance(m, dict) or m.get("role") not in ("user", "tool"):
                continue
            content = m.get("content")
            if isinstance(content, str):
                self.remember_text(content)
            elif isinstance(content, list):
                for part in content:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        self.remember_text(part["text"])

    def check_domains(self, target: Target) -> Refusal | None:
        """For every hop, redirects included."""
        return self.policy.domains.refuses(target.host, "operator") or self.client.refuses(target.host, "client")

    def check(self, target: Target) -> Refusal | None:
        """For the URL the model asked for."""
        refusal = self.check_domains(target)
        if refusal is not None:
            return refusal
        if self.policy.require_prior_context and target.url not in self.known:
            return Refusal(URL_NOT_IN_PRIOR_CONTEXT, "not_in_context",
                           "only URLs that appeared earlier in the conversation or in search results can be fetched")
        return None
