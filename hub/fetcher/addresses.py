"""Which IP addresses a server-side fetch may connect to. Decided on the address actually connected
to (hub/fetcher/connect.py), never on the URL's spelling of a host: every encoding of 127.0.0.1
that a resolver accepts ends up here as 127.0.0.1.

Python's ipaddress.is_private/is_global are not used: their answers changed between patch releases
and they miss addresses embedded in IPv6 (mapped, NAT64, 6to4, Teredo), so the table is explicit."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _nets(*specs: str) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(s) for s in specs)


# Never a destination, whatever the operator allows: "this network" (0.0.0.0 reaches the local host
# on Linux), multicast, reserved/broadcast, the IPv6 unspecified address and multicast.
NEVER = _nets("0.0.0.0/8", "224.0.0.0/4", "240.0.0.0/4", "::/128", "ff00::/8")
# Loopback, link-local and the cloud metadata endpoints (169.254.169.254 and ECS's 169.254.170.2 are
# link-local; AWS's IPv6 fd00:ec2::254 and Alibaba's 100.100.100.200 sit inside ranges that
# allowPrivate opens, so they are listed here to stay closed). Only an explicit allowHosts entry
# opens these.
LOCAL = _nets("127.0.0.0/8", "169.254.0.0/16", "::1/128", "fe80::/10", "fd00:ec2::254/128", "100.100.100.200/32")
# Private networks: what webFetch.allowPrivate opens, for intranet deployments.
PRIVATE = _nets("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7", "fec0::/10")
# Special-purpose ranges that are neither the internet nor anyone's intranet.
SPECIAL = _nets(
    "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
    "::/96", "100::/64", "2001::/32", "2001:db8::/32", "3fff::/20",
)
GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
NAT64 = _nets("64:ff9b::/96", "64:ff9b:1::/48")


def parse_ip(text: str) -> IP | None:
    """A canonical IP literal (brackets and an IPv6 zone stripped), or None for anything else."""
    s = text.strip()
    if s.startswith("[") and s.endswith("]"):
        s = s[1:-1]
    try:
        return ipaddress.ip_address(s.split("%", 1)[0])
    except ValueError:
        return None


def embedded_ipv4(ip: IP) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries: IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo."""
    if ip.version == 4:
        return None
    assert isinstance(ip, ipaddress.IPv6Address)
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if any(ip in n for n in NAT64) or (int(ip) >> 32 == 0 and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def classify(ip: IP) -> str:
    """'public', or why not: 'never', 'local', 'private' or 'special'. An IPv6 address that embeds
    an IPv4 one is at least as restricted as the address it embeds."""
    inner = embedded_ipv4(ip)
    if inner is not None:
        kind = classify(inner)
        if ip.version == 6 and (ip.teredo is not None or ip in ipaddress.ip_network("::/96")):
            return kind if kind != "public" else "special"  # tunnel/deprecated forms: never public
        return kind
    for kind, nets in (("never", NEVER), ("local", LOCAL), ("private", PRIVATE), ("special", SPECIAL)):
        if any(ip in n for n in nets):
            return kind
    if ip.version == 6 and ip not in GLOBAL_UNICAST_V6:
        return "special"
    return "public"


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """The operator's exceptions to "public addresses only", fixed at config load.

    allow_private opens the private ranges (RFC 1918, CGNAT, ULA, site-local). allowed_hosts names
    hosts (a name and its subdomains) and networks (an address or CIDR) that may be reached whatever
    their address, loopback and link-local included; NEVER stays closed for everyone."""

    allow_private: bool = False
    allowed_names: tuple[str, ...] = ()
    allowed_networks: tuple[Network, ...] = ()

    @classmethod
    def build(cls, allow_private: bool = False, allow_hosts: Iterable[str] = ()) -> AddressPolicy:
        names: list[str] = []
        nets: list[Network] = []
        for entry in allow_hosts:
            e = entry.strip().lower().rstrip(".")
            if not e:
                continue
            try:
                nets.append(ipaddress.ip_network(e.strip("[]"), strict=False))
            except ValueError:
                names.append(e.removeprefix("*."))
        return cls(allow_private, tuple(names), tuple(nets))

    def refuses(self, host: str, ip: IP) -> str | None:
        """None when host may be reached at ip, else the address class that forbids it."""
        kind = classify(ip)
        if kind == "public":
            return None
        if kind == "never":
            return kind
        name = host.strip("[]").rstrip(".").lower()
        if any(name == n or name.endswith("." + n) for n in self.allowed_names):
            return None
        inner = embedded_ipv4(ip)
        if any(ip in n or (inner is not None and inner in n) for n in self.allowed_networks):
            return None
        if kind == "private" and self.allow_private:
            return None
        return kind
