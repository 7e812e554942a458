"""Prometheus metrics named as CoreDNS's: `coredns_dns_requests_total`, `coredns_dns_responses_total`,
`coredns_dns_request_duration_seconds`, plus the response cache's hits and misses and the packets that could not be
read."""

from __future__ import annotations

import bisect
from collections import Counter

from tinykube.metrics import exponential_buckets

# CoreDNS's buckets: 0.25 ms doubling up to ~8 s.
BUCKETS = exponential_buckets(0.00025, 2, 16)


class DnsMetrics:
    def __init__(self, server: str, zone: str) -> None:
        self.server = server
        self.zone = zone
        self.requests: Counter[tuple[str, str, str]] = Counter()  # (proto, family, type)
        self.responses: Counter[str] = Counter()  # rcode
        self.durations: dict[str, list[int]] = {}  # type -> per-bucket counts (the last is +Inf)
        self.duration_sums: dict[str, float] = {}
        self.cache_hits = 0
        self.cache_misses = 0
        self.panics = 0  # queries that raised: answered SERVFAIL, counted as CoreDNS's coredns_panics_total
        # Packets that could not be read, by what became of them: answered (FORMERR, NOTIMP), ignored (no header,
        # or a response), dropped (their source over its limit), refused (TCP connections over a cap or limit).
        self.malformed: Counter[str] = Counter()

    def observe(self, proto: str, family: str, type_name: str, rcode_name: str, seconds: float, n: int = 1) -> None:
        """`n` requests of one kind, each answered in `seconds`."""
        self.requests[(proto, family, type_name)] += n
        self.responses[rcode_name] += n
        counts = self.durations.get(type_name)
        if counts is None:
            counts = self.durations[type_name] = [0] * (len(BUCKETS) + 1)
        counts[bisect.bisect_left(BUCKETS, seconds)] += n
        self.duration_sums[type_name] = self.duration_sums.get(type_name, 0.0) + seconds * n

    def observe_hits(self, proto: str, family: str, counts: dict[tuple[str, str], int], seconds: float) -> None:
        """Answers from the response cache: `counts` by (type, rcode), each taking `seconds`."""
        for (type_name, rcode_name), n in counts.items():
            self.observe(proto, family, type_name, rcode_name, seconds, n)
            self.cache_hits += n

    def render(self) -> str:
        base = f'server="{self.server}",zone="{self.zone}",view=""'
        out = [
            "# HELP coredns_dns_requests_total Counter of DNS requests made per zone, protocol and family.",
            "# TYPE coredns_dns_requests_total counter",
        ]
        for (proto, family, qtype), n in sorted(self.requests.items()):
            out.append(f'coredns_dns_requests_total{{{base},proto="{proto}",family="{family}",type="{qtype}"}} {n}')
        out += [
            "# HELP coredns_dns_responses_total Counter of response status codes.",
            "# TYPE coredns_dns_responses_total counter",
        ]
        for rcode, n in sorted(self.responses.items()):
            out.append(f'coredns_dns_responses_total{{{base},rcode="{rcode}",plugin="kubernetes"}} {n}')
        out += [
            "# HELP coredns_dns_request_duration_seconds Histogram of the time (in seconds) each request took.",
            "# TYPE coredns_dns_request_duration_seconds histogram",
        ]
        for qtype, counts in sorted(self.durations.items()):
            running = 0
            for bound, n in zip([*map(repr, BUCKETS), "+Inf"], counts, strict=True):
                running += n
                out.append(
                    f'coredns_dns_request_duration_seconds_bucket{{{base},type="{qtype}",le="{bound}"}} {running}'
                )
            out.append(f'coredns_dns_request_duration_seconds_sum{{{base},type="{qtype}"}} {self.duration_sums[qtype]}')
            out.append(f'coredns_dns_request_duration_seconds_count{{{base},type="{qtype}"}} {running}')
        out += [
            "# HELP tinykube_dns_response_cache_total Responses served from the response cache (hit) or built (miss).",
            "# TYPE tinykube_dns_response_cache_total counter",
            f'tinykube_dns_response_cache_total{{result="hit"}} {self.cache_hits}',
            f'tinykube_dns_response_cache_total{{result="miss"}} {self.cache_misses}',
            "# HELP tinykube_dns_malformed_total Packets not readable as a query, and TCP connections refused.",
            "# TYPE tinykube_dns_malformed_total counter",
            *(
                f'tinykube_dns_malformed_total{{result="{result}"}} {self.malformed[result]}'
                for result in ("answered", "ignored", "dropped", "refused")
            ),
            "# HELP coredns_panics_total A metrics that counts the number of panics.",
            "# TYPE coredns_panics_total counter",
            f"coredns_panics_total {self.panics}",
        ]
        return "\n".join(out) + "\n"
