"""`tinykube up` to /readyz green, and idle resident memory (tinykube + etcd), over several fresh clusters; runs
with and without the DNS server alternate, so the noisy machine weighs on both alike."""

from __future__ import annotations

import compileall
import statistics
import sys
import time
from pathlib import Path

from common import start

VARIANTS = {"default (with DNS)": (), "without DNS (--dns-port -1)": ("--dns-port", "-1")}


def main(runs: int = 5) -> None:
    # As an installed package has them: this machine sets PYTHONDONTWRITEBYTECODE, so an editable checkout would
    # otherwise compile every module on every start (~0.5 s of the start-up measured).
    compileall.compile_dir(Path(__file__).parent.parent / "tinykube", quiet=1)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    memory: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(runs):
        for name, extra in VARIANTS.items():
            bench = start(*extra)
            times[name].append(bench.startup)
            time.sleep(3)  # idle
            memory[name].append(bench.rss_mb())
            bench.stop()
    for name in VARIANTS:
        print(f"{name}:")
        took, rss = times[name], memory[name]
        print(f"  startup to /readyz: median {statistics.median(took):.2f}s, max {max(took):.2f}s ({runs} runs)")
        print(f"  idle RSS (tinykube + etcd): median {statistics.median(rss):.0f} MB, max {max(rss):.0f} MB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
