"""Allocatable ranges as upstream defines them, and the random scan that picks a free member.

A range maps its members onto offsets 0..size-1. IPv4 ranges exclude the network and broadcast addresses, IPv6
ranges only the network address (and are capped at 65,535 members, as upstream's bitmap is). The first `static_band`
offsets are the "static" subrange that dynamic allocation uses only when the rest is full (KEP-3070), so users can
pick fixed addresses there without racing the allocator.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable
from dataclasses import dataclass

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class RangeError(Exception):
    """An allocator refusal; the message is upstream's."""


class NotInRange(RangeError):
    pass


class AlreadyAllocated(RangeError):
    pass


class RangeFull(RangeError):
    def __init__(self) -> None:
        super().__init__("range is full")


def _static_band(size: int, divisor: int, ceiling: int) -> int:
    if size <= 16:
        return 0
    return max(16, min(size // divisor, ceiling))


@dataclass(frozen=True)
class IPRange:
    network: IPNetwork

    @classmethod
    def parse(cls, cidr: str) -> IPRange:
        return cls(ipaddress.ip_network(cidr.strip(), strict=True))

    @property
    def family(self) -> str:
        return "IPv4" if self.network.version == 4 else "IPv6"

    @property
    def size(self) -> int:
        total = self.network.num_addresses
        if self.network.version == 4:
            return max(total - 2, 0)
        return min(total, 65536) - 1

    @property
    def static_band(self) -> int:
        # Computed from the whole block, network and broadcast included, as upstream does.
        return _static_band(min(self.network.num_addresses, 1 << 20), 16, 256)

    def at(self, offset: int) -> str:
        return str(self.network.network_address + 1 + offset)

    def offset_of(self, value: str) -> int | None:
        """The member's offset, or None when `value` is not a member (network/broadcast/outside/other family)."""
        try:
            ip = ipaddress.ip_address(value)
        except ValueError:
            return None
        if ip.version != self.network.version or ip not in self.network:
            return None
        offset = int(ip) - int(self.network.network_address) - 1
        return offset if 0 <= offset < self.size else None

    def canonical(self, value: str) -> str:
        return str(ipaddress.ip_address(value))

    def not_in_range(self, value: str) -> NotInRange:
        return NotInRange(f"the provided IP ({value}) is not in the valid range. The range of valid IPs is {self}")

    def already_allocated(self) -> AlreadyAllocated:
        return AlreadyAllocated("provided IP is already allocated")

    def __str__(self) -> str:
        return str(self.network)


@dataclass(frozen=True)
class PortRange:
    base: int
    size: int

    @classmethod
    def parse(cls, text: str) -> PortRange:
        """`30000-32767` (inclusive) or a single port."""
        low, sep, high = text.strip().partition("-")
        try:
            first, last = int(low), int(high) if sep else int(low)
        except ValueError:
            raise ValueError(f"invalid port range {text!r}: expected LOW-HIGH, e.g. 30000-32767") from None
        if not 0 < first <= last <= 65535:
            raise ValueError(f"invalid port range {text!r}: ports must be 1-65535 and LOW <= HIGH")
        return cls(first, last - first + 1)

    family = ""

    @property
    def static_band(self) -> int:
        return _static_band(self.size, 32, 128)

    def at(self, offset: int) -> str:
        return str(self.base + offset)

    def offset_of(self, value: str) -> int | None:
        try:
            port = int(value)
        except ValueError:
            return None
        return port - self.base if 0 <= port - self.base < self.size else None

    def canonical(self, value: str) -> str:
        return str(int(value))

    def not_in_range(self, value: str) -> NotInRange:
        return NotInRange(f"provided port is not in the valid range. The range of valid ports is {self}")

    def already_allocated(self) -> AlreadyAllocated:
        return AlreadyAllocated("provided port is already allocated")

    def __str__(self) -> str:
        return f"{self.base}-{self.base + self.size - 1}"


Range = IPRange | PortRange


def pick_offset(size: int, static_band: int, taken: Callable[[int], bool], rng: random.Random) -> int | None:
    """A free offset: a random start in the dynamic band [static_band, size) scanning upwards with wrap-around,
    then the same in the static band; None when both are full."""
    for low, high in ((static_band, size), (0, static_band)):
        span = high - low
        if span <= 0:
            continue
        start = rng.randrange(span)
        for i in range(span):
            offset = low + (start + i) % span
            if not taken(offset):
                return offset
    return None


def bitmap(offsets: list[int]) -> bytes:
    """Upstream's RangeAllocation `data` for these offsets: the big-endian bytes of an integer whose bit i is set
    for offset i (empty when nothing is allocated); shown for tools that read upstream's bitmap."""
    value = 0
    for offset in offsets:
        value |= 1 << offset
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def parse_service_ranges(text: str) -> list[IPRange]:
    """`--service-cluster-ip-range`: one CIDR, or two of different families (dual-stack; the first is primary)."""
    cidrs = [c for c in text.split(",") if c.strip()]
    if not 1 <= len(cidrs) <= 2:
        raise ValueError("--service-cluster-ip-range takes one CIDR or two (one IPv4 and one IPv6)")
    ranges: list[IPRange] = []
    for cidr in cidrs:
        try:
            ranges.append(IPRange.parse(cidr))
        except ValueError as err:
            raise ValueError(f"--service-cluster-ip-range: {cidr.strip()!r} is not a valid CIDR: {err}") from None
    for r in ranges:
        bits, least = (32, 12) if r.network.version == 4 else (128, 108)
        if r.network.prefixlen < least:
            too_large = "specified --service-cluster-ip-range is too large"
            raise ValueError(f"{too_large}; for {bits}-bit addresses, the mask must be >= {least}")
    if len(ranges) == 2 and ranges[0].family == ranges[1].family:
        raise ValueError("--service-cluster-ip-range: a dual-stack range needs one IPv4 and one IPv6 CIDR")
    return ranges
