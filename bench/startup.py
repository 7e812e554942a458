"""`tinykube up` to /readyz green, and idle resident memory (tinykube + etcd), over several fresh clusters; runs
with and without the DNS server alternate, so the noisy machine weighs on both alike.

    python startup.py [RUNS] [REFERENCE_TREE]

With REFERENCE_TREE (a checkout of another commit, e.g. from `git worktree add /tmp/old <commit>`), each variant
is also started from that tree (on PYTHONPATH), alternating with this one: the reference measured in the same run.
"""

from __future__ import annotations

import compileall
import os
import statistics
import sys
import time
from pathlib import Path

from common import start

VARIANTS = {"default (with DNS)": (), "without DNS (--dns-port -1)": ("--dns-port", "-1")}
HERE = Path(__file__).resolve().parent.parent


def main(runs: int = 5, reference: Path | None = None) -> None:
    trees = {"": HERE, " [reference]": reference} if reference else {"": HERE}
    for tree in trees.values():
        # As an installed package has them: this machine sets PYTHONDONTWRITEBYTECODE, so an editable checkout
        # would otherwise compile every module on every start (~0.5 s of the start-up measured).
        compileall.compile_dir(tree / "tinykube", quiet=1)
    runs_of = [f"{name}{label}" for name in VARIANTS for label in trees]
    times: dict[str, list[float]] = {name: [] for name in runs_of}
    memory: dict[str, list[float]] = {name: [] for name in runs_of}
    for _ in range(runs):
        for name, extra in VARIANTS.items():
            for label, tree in trees.items():
                os.environ["PYTHONPATH"] = str(tree)
                bench = start(*extra)
                times[name + label].append(bench.startup)
                time.sleep(3)  # idle
                memory[name + label].append(bench.rss_mb())
                bench.stop()
    for name in runs_of:
        print(f"{name}:")
        took, rss = times[name], memory[name]
        print(f"  startup to /readyz: median {statistics.median(took):.2f}s, max {max(took):.2f}s ({runs} runs)")
        print(f"  idle RSS (tinykube + etcd): median {statistics.median(rss):.0f} MB, max {max(rss):.0f} MB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, Path(sys.argv[2]) if len(sys.argv) > 2 else None)
