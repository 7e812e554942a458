"""`tinykube up` to /readyz green, and idle resident memory (tinykube + etcd), over several fresh clusters."""

from __future__ import annotations

import statistics
import sys
import time

from common import start


def main(runs: int = 5) -> None:
    times, memory = [], []
    for _ in range(runs):
        bench = start()
        times.append(bench.startup)
        time.sleep(3)  # idle
        memory.append(bench.rss_mb())
        bench.stop()
    print(f"startup to /readyz: median {statistics.median(times):.2f}s, max {max(times):.2f}s ({runs} runs)")
    print(f"idle RSS (tinykube + etcd): median {statistics.median(memory):.0f} MB, max {max(memory):.0f} MB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
