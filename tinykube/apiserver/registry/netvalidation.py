"""apimachinery's rules for IP addresses, CIDRs, port numbers and IANA port names (`k8s.io/apimachinery/pkg/util/
validation`, `k8s.io/utils/net`), with upstream's messages, as the validations of Services, Pods, Ingresses and
NetworkPolicies, webhooks and APIServices all use them.

Generic: the rules know no kind. Each returns messages (for the caller to attach to its own field path), or a
parsed value; Go's parser is stricter than Python's in places (no zone suffix, no leading zeros), and the rules
follow Go's.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_CIDR_MSG = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
_PORT_MSG = "must be between 1 and 65535, inclusive"
_PORT_NAME_CHARS = re.compile("[-a-z0-9]+")


def parse_ip(value: Any) -> IPAddress | None:
    # Go's parser knows no zone suffix ("fe80::1%eth0"); Python's does. Leading zeros are rejected by both.
    if not isinstance(value, str) or "%" in value:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def unmapped(ip: IPAddress) -> IPAddress:
    """Go treats ::ffff:a.b.c.d as the IPv4 address a.b.c.d everywhere (family, loopback, ...)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_ipv6(value: str) -> bool:
    ip = parse_ip(value)
    return ip is not None and unmapped(ip).version == 6


def ip_errors(value: str) -> list[str]:
    return [] if parse_ip(value) is not None else [_IP_MSG]


def non_special_ip_errors(value: str) -> list[str]:
    """Addresses that can never be a Service's external IP (upstream ValidateNonSpecialIP)."""
    parsed = parse_ip(value)
    if parsed is None:
        return ["must be a valid IP address"]
    ip = unmapped(parsed)
    errs: list[str] = []
    if ip.is_unspecified:
        errs.append(f"may not be unspecified ({value})")
    if ip.is_loopback:
        errs.append("may not be in the loopback range (127.0.0.0/8, ::1/128)")
    if ip.is_link_local:
        errs.append("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
    if _is_link_local_multicast(ip):
        errs.append("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
    return errs


def _is_link_local_multicast(ip: IPAddress) -> bool:
    if isinstance(ip, ipaddress.IPv4Address):
        return ip in ipaddress.IPv4Network("224.0.0.0/24")
    packed = ip.packed
    return packed[0] == 0xFF and packed[1] & 0x0F == 0x02  # any ffX2:: multicast with link-local scope, as Go


def cidr_errors(value: str) -> list[str]:
    """Go's ParseCIDR: address '/' decimal prefix; host bits may be set."""
    addr, slash, prefix = value.partition("/") if isinstance(value, str) else ("", "", "")
    ip = parse_ip(addr) if slash else None
    if ip is None or not (prefix.isascii() and prefix.isdigit()) or len(prefix) > 3:
        return [_CIDR_MSG]
    return [] if int(prefix) <= ip.max_prefixlen else [_CIDR_MSG]


def port_number_errors(n: Any) -> list[str]:
    ok = isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 65535
    return [] if ok else [_PORT_MSG]


def iana_port_name_errors(name: str) -> list[str]:
    """IANA_SVC_NAME (RFC 6335), the rule for a named targetPort."""
    errs: list[str] = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.fullmatch(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs
