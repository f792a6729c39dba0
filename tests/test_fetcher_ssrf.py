"""Nothing private is ever connected to. Real loopback servers count every TCP connection they
accept; under the default policy, with the servers' port allowed (so that only the address check
stands between the URL and the socket), hostile URLs of every spelling must leave the count at 0."""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
from collections.abc import Iterator

import pytest
import trustme
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.fetcher import AddressPolicy, Fetcher, FetchLimits, UrlPolicy
from hub.fetcher.addresses import classify, parse_ip
from hub.fetcher.connect import AddressRefused, GuardedBackend, SystemResolver
from hub.fetcher.result import INVALID_TOOL_INPUT, URL_NOT_ACCESSIBLE, URL_NOT_ALLOWED
from hub.store import MemoryStore

from .fakes.web import MAIN_SENTENCES, FakeWeb, RebindingResolver, StaticResolver

OPEN = UrlPolicy(require_prior_context=False)


@pytest.fixture(scope="module")
def v4() -> Iterator[FakeWeb]:
    w = FakeWeb("127.0.0.1").start()
    yield w
    w.stop()


@pytest.fixture(scope="module")
def v6(v4: FakeWeb) -> Iterator[FakeWeb]:
    w = FakeWeb("::1", port=v4.port).start()  # same port: one allowed port covers both
    yield w
    w.stop()


def run_fetch(fetcher: Fetcher, url: object, scope=None):
    async def run():
        try:
            return await fetcher.fetch(url, scope or OPEN.scope())
        finally:
            await fetcher.aclose()
    return asyncio.run(run())


def default_fetcher(port: int, resolver=None, **limits) -> Fetcher:
    """The default address policy; only the port of the test servers is added, and the cache is off."""
    return Fetcher(FetchLimits(allowed_ports=frozenset({80, 443, port}), cache_ttl_s=0, connect_timeout_s=1,
                               timeout_s=3, **limits), AddressPolicy(), MemoryStore(), resolver=resolver)


# -- the address table ---------------------------------------------------------------------------

@pytest.mark.parametrize("addr", [
    "127.0.0.1", "127.255.255.254", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
    "100.64.0.1", "100.127.255.255", "169.254.169.254", "169.254.170.2", "192.0.0.8", "192.0.2.1",
    "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1",
    "255.255.255.255", "::", "::1", "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:169.254.169.254",
    "::127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b:1::a00:1",
    "2002:a9fe:a9fe::1", "2002:7f00:1::", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:db8::1",
    "3fff::1", "fc00::1", "fd00:ec2::254", "fe80::1", "fec0::1", "ff02::1", "100::1", "fe80::1%eth0",
])
def test_non_public_addresses_are_refused(addr):
    ip = parse_ip(addr)
    assert ip is not None
    assert classify(ip) != "public"
    assert AddressPolicy().refuses("h", ip) is not None


@pytest.mark.parametrize("addr", ["8.8.8.8", "93.184.216.34", "1.1.1.1", "2606:4700:4700::1111",
                                  "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::808:808"])
def test_public_addresses_pass(addr):
    assert AddressPolicy().refuses("h", parse_ip(addr)) is None


def test_allow_private_opens_intranets_but_not_loopback_or_metadata():
    p = AddressPolicy.build(allow_private=True)
    for ok in ("10.0.0.5", "192.168.1.10", "100.64.1.1", "fd12::1", "::ffff:10.0.0.5"):
        assert p.refuses("wiki.corp", parse_ip(ok)) is None, ok
    for bad in ("127.0.0.1", "169.254.169.254", "fd00:ec2::254", "100.100.100.200", "::1", "0.0.0.0", "fe80::1"):
        assert p.refuses("wiki.corp", parse_ip(bad)) is not None, bad


def test_allow_hosts_by_name_network_and_never_the_unspecified_address():
    p = AddressPolicy.build(allow_hosts=["wiki.corp", "10.9.0.0/16", "127.0.0.1"])
    assert p.refuses("wiki.corp", parse_ip("10.1.1.1")) is None
    assert p.refuses("docs.wiki.corp", parse_ip("127.0.0.1")) is None
    assert p.refuses("other.corp", parse_ip("10.9.3.3")) is None
    assert p.refuses("other.corp", parse_ip("10.8.3.3")) == "private"
    assert p.refuses("x", parse_ip("::ffff:127.0.0.1")) is None  # the allowed address in IPv6 dress
    assert p.refuses("wiki.corp", parse_ip("0.0.0.0")) == "never"


# -- URLs that spell a loopback address ----------------------------------------------------------

def _ipv4_spellings(ip: str) -> list[str]:
    a, b, c, d = (int(x) for x in ip.split("."))
    n = int(ipaddress.IPv4Address(ip))
    return [
        ip, str(n), hex(n), oct(n).replace("0o", "0"), f"{a}.{(b << 16) | (c << 8) | d}",
        f"{a}.{b}.{(c << 8) | d}", f"0x{a:x}.{b}.{c}.{d}", f"0{a:o}.0{b:o}.0{c:o}.0{d:o}",
        f"0x{a:02x}.0x{b:02x}.0x{c:02x}.0x{d:02x}", f"{a}.{b}.{c}.{d}.", f"0x{a:x}.{(b << 16) | (c << 8) | d}",
        "".join(chr(0xFF10 + int(ch)) if ch.isdigit() else "．" for ch in ip),  # full-width digits and dots
        "%" + "%".join(f"{ord(ch):02x}" for ch in ip),  # percent-encoded host
    ]


def _hosts(ip: str) -> list[str]:
    v6 = [f"[::ffff:{ip}]", f"[::{ip}]", f"[0:0:0:0:0:ffff:{ip}]",
          "[::ffff:{:x}:{:x}]".format(*divmod(int(ipaddress.IPv4Address(ip)), 1 << 16)),
          "[64:ff9b::{:x}:{:x}]".format(*divmod(int(ipaddress.IPv4Address(ip)), 1 << 16)),
          "[2002:{:x}:{:x}::1]".format(*divmod(int(ipaddress.IPv4Address(ip)), 1 << 16))]
    return _ipv4_spellings(ip) + v6 + ["[::1]", "[0::1]", "[0:0:0:0:0:0:0:1]", "localhost", "localhost.",
                                       "LOCALHOST", "LocalHost.", "[::]", "0.0.0.0", "0"]


loopback = st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(1, 254)).map(
    lambda t: f"127.{t[0]}.{t[1]}.{t[2]}")
host = st.one_of(st.just("127.0.0.1"), loopback).flatmap(lambda ip: st.sampled_from(_hosts(ip)))
userinfo = st.sampled_from(["", "a@", "user:pass@", "evil.com@", "127.0.0.1@"])
path = st.sampled_from(["/", "/article", "/latest/meta-data/", "/?q=1", "/%2e%2e/admin", "/#frag"])
scheme = st.sampled_from(["http", "HTTP", "https", "hTTp"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scheme=scheme, userinfo=userinfo, host=host, path=path)
def test_hostile_loopback_urls_never_connect(v4, v6, scheme, userinfo, host, path):
    v4.reset()
    v6.reset()
    url = f"{scheme}://{userinfo}{host}:{v4.port}{path}"
    r = run_fetch(default_fetcher(v4.port, SystemResolver()), url)
    # Refused as not allowed (or unparseable), never merely "could not resolve".
    assert r.error_code in (URL_NOT_ALLOWED, INVALID_TOOL_INPUT), (url, r.error)
    assert v4.connections == 0 and v6.connections == 0, url


@pytest.mark.parametrize("spelling", ["0x7f.1", "2130706433", "127.1", "0177.0.0.1", "localhost", "127.0.0.1",
                                      "::1", "::ffff:127.0.0.1", "0.0.0.0"])
def test_connection_layer_refuses_what_the_resolver_makes_of_a_spelling(spelling):
    """Even a spelling the URL parser let through is refused where the socket is opened: the check
    is on the resolver's answer, and getaddrinfo accepts 0x7f.1 and 2130706433 as 127.0.0.1."""
    backend = GuardedBackend(AddressPolicy(), SystemResolver())
    with pytest.raises(AddressRefused):
        asyncio.run(backend.connect_tcp(spelling, 80))


def test_positive_control_the_counter_sees_an_allowed_connection(v4):
    """The same setup with loopback allowed does connect: the zero counts above are meaningful."""
    v4.reset()
    allowed = Fetcher(FetchLimits(allowed_ports=frozenset({v4.port}), cache_ttl_s=0),
                      AddressPolicy.build(allow_hosts=["127.0.0.1"]), MemoryStore())
    r = run_fetch(allowed, f"http://127.0.0.1:{v4.port}/article")
    assert r.ok and v4.connections == 1


def test_default_policy_refuses_the_loopback_site(v4):
    v4.reset()
    r = run_fetch(default_fetcher(v4.port), f"http://127.0.0.1:{v4.port}/article")
    assert r.error_code == URL_NOT_ALLOWED and v4.connections == 0


def test_non_standard_port_is_refused_by_default(v4):
    v4.reset()
    fetcher = Fetcher(FetchLimits(), AddressPolicy.build(allow_hosts=["127.0.0.1"]), MemoryStore())
    r = run_fetch(fetcher, f"http://127.0.0.1:{v4.port}/article")
    assert r.error_code == URL_NOT_ALLOWED and "port" in r.error and v4.connections == 0


# -- names that resolve to private addresses, rebinding, redirects -------------------------------

@pytest.mark.parametrize("answers", [["127.0.0.1"], ["::1"], ["93.184.216.34", "127.0.0.1"],
                                     ["::ffff:127.0.0.1"], ["10.0.0.1"], ["169.254.169.254"], ["not-an-ip"]])
def test_public_looking_name_that_resolves_privately(v4, v6, answers):
    v4.reset()
    v6.reset()
    resolver = StaticResolver({"news.example.com": answers})
    r = run_fetch(default_fetcher(v4.port, resolver), f"http://news.example.com:{v4.port}/article")
    assert r.error_code == URL_NOT_ALLOWED
    assert v4.connections == 0 and v6.connections == 0
    assert resolver.calls == ["news.example.com"]


def test_dns_rebinding_gets_nothing(v4):
    """The resolver answers an allowed address first and loopback after: the connection goes to the
    address that was checked, and the name is resolved once per connection."""
    other = FakeWeb("127.0.0.2", port=v4.port).start()
    try:
        v4.reset()
        resolver = RebindingResolver(first=["127.0.0.2"], then=["127.0.0.1"])
        fetcher = Fetcher(FetchLimits(allowed_ports=frozenset({v4.port}), cache_ttl_s=0),
                          AddressPolicy.build(allow_hosts=["127.0.0.2"]), MemoryStore(), resolver=resolver)
        r = run_fetch(fetcher, f"http://rebind.example:{v4.port}/article")
        assert r.ok and MAIN_SENTENCES[0] in r.text
        assert other.connections == 1 and v4.connections == 0 and resolver.calls == ["rebind.example"]
        again = Fetcher(FetchLimits(allowed_ports=frozenset({v4.port}), cache_ttl_s=0),
                        AddressPolicy.build(allow_hosts=["127.0.0.2"]), MemoryStore(), resolver=resolver)
        assert run_fetch(again, f"http://rebind.example:{v4.port}/article").error_code == URL_NOT_ALLOWED
        assert v4.connections == 0
    finally:
        other.stop()


@pytest.mark.parametrize("to", [
    "http://127.0.0.1:{port}/article", "http://localhost:{port}/article", "http://[::1]:{port}/article",
    "http://[::ffff:127.0.0.1]:{port}/article", "http://169.254.169.254/latest/meta-data/",
    "http://2130706433:{port}/", "http://internal.example:{port}/article",
])
def test_redirect_into_private_space(v4, v6, to):
    """site.example is allowed by name (it is the fake site); where it redirects is checked again."""
    resolver = StaticResolver({"site.example": ["127.0.0.1"], "internal.example": ["10.0.0.7"],
                               "localhost": ["127.0.0.1"]})
    fetcher = Fetcher(FetchLimits(allowed_ports=frozenset({80, v4.port}), cache_ttl_s=0, connect_timeout_s=1),
                      AddressPolicy.build(allow_hosts=["site.example"]), MemoryStore(), resolver=resolver)
    v4.reset()
    v6.reset()
    r = run_fetch(fetcher, f"http://site.example:{v4.port}/redirect?to=" + to.format(port=v4.port))
    assert r.error_code == URL_NOT_ALLOWED and "redirected" in r.error
    assert v4.connections == 1 and v6.connections == 0  # the redirecting page only
    assert v4.requests[0][0].startswith("/redirect")


# -- TLS: the socket goes to the checked address, the certificate is checked for the name -----------

@pytest.fixture(scope="module")
def tls_site() -> Iterator[tuple[FakeWeb, ssl.SSLContext, list[str]]]:
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("site.example").configure_cert(server_ctx)
    seen_sni: list[str] = []
    server_ctx.sni_callback = lambda sock, name, ctx: seen_sni.append(name)
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    w = FakeWeb(ssl_context=server_ctx).start()
    yield w, client_ctx, seen_sni
    w.stop()


def test_tls_uses_the_host_name_for_sni_certificate_and_host_header(tls_site):
    web, client_ctx, seen_sni = tls_site
    resolver = StaticResolver({"site.example": ["127.0.0.1"], "other.example": ["127.0.0.1"]})
    policy = AddressPolicy.build(allow_hosts=["site.example", "other.example"])
    limits = FetchLimits(allowed_ports=frozenset({web.port}), cache_ttl_s=0)
    r = run_fetch(Fetcher(limits, policy, MemoryStore(), resolver=resolver, ssl_context=client_ctx),
                  f"https://site.example:{web.port}/host")
    assert r.ok, r.error
    assert r.text == f"host header was site.example:{web.port}" and seen_sni[-1] == "site.example"
    # Same address, a name the certificate does not cover: verification fails, nothing is read.
    bad = run_fetch(Fetcher(limits, policy, MemoryStore(), resolver=resolver, ssl_context=client_ctx),
                    f"https://other.example:{web.port}/host")
    assert bad.error_code == URL_NOT_ACCESSIBLE
