#!/usr/bin/env python3
"""Where a request's time goes besides its instructions: callgrind's cache
and branch-predictor simulation of each server, per request, beside its
instruction count. The timed e2e tables show our user time further above
hyper alone's than our instructions are; this says by what: first-level
data-cache misses (memory a request touches that is no longer in L1),
first-level instruction-cache misses (the code it runs) and mispredicted
branches. The data misses are counted with the simulated L1 at four sizes:
they fall off once the cache holds what a request touches, which shows
how much that is (`footprint.py` says where it lives).

Deterministic: `callgrind.py`'s runs (the server under valgrind, driven by
benches/e2e over two connections, at n and 3n units, (X(3n) - X(n)) / 2n),
each server on one worker thread (`TOKIO_WORKER_THREADS=1`: with two, the
order valgrind runs them in moves the counts by several percent), with
`--cache-sim=yes --D1=SIZE,WAYS,64` (64 sets of 64-byte lines, SIZE / 4096
ways; the other caches as the machine reports its own), and at this
machine's L1 size also `--branch-sim=yes`. A model, not the hardware:
no prefetcher, no second-level cache, a simple branch predictor; its counts
rank and compare, they are not cycles.

usage: cache_sim.py --e2e BIN --server NAME=BIN [--server NAME=BIN ...] [--keep DIR]
(`--keep`: the profiles stay in DIR, NAME-REQUEST-KIB-UNITS.out, for
`callgrind_annotate`.)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import callgrind  # noqa: E402  (benches/callgrind.py)

# (request, modern, units at n, requests per unit)
ERAS = [("2026-07-28 tools/call", True, 1000, 1),
        ("legacy session, per request", False, 500, 3)]
# Simulated L1 data caches, in KiB (64 sets each); 32 is this machine's.
SWEEP = [16, 32, 48, 64]
MACHINE = 32


def per_request(path, e2e, modern, n, per, simulate, keep=None):
    """Each event per request, as (X(3n) - X(n)) / 2n / per; with `keep`,
    the profile of k units stays in `{keep}-{k}.out`."""
    def run(k):
        return callgrind.server_run([path], e2e, k, modern, simulate=simulate,
                                    parse=callgrind.event_totals,
                                    keep=keep and f"{keep}-{k}.out")
    one, three = run(n), run(3 * n)
    return {k: (three[k] - one[k]) / (2 * n) / per for k in one}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--e2e", required=True)
    ap.add_argument("--server", action="append", required=True, help="NAME=BIN")
    ap.add_argument("--keep", help="a directory to keep the profiles in")
    o = ap.parse_args()
    if o.keep:
        os.makedirs(o.keep, exist_ok=True)
    os.environ["TOKIO_WORKER_THREADS"] = "1"  # the servers inherit it
    servers = [s.split("=", 1) for s in o.server]
    print("Per request, callgrind's cache and branch simulation (`benches/cache_sim.py`, one "
          "worker), (X(3n) − X(n)) ÷ 2n; L1 data misses with the L1 at "
          + " / ".join(str(k) for k in SWEEP) + f" KiB ({MACHINE}: this machine's):\n")
    print("| request | server | instructions | L1 data misses | L1 instruction misses "
          "| mispredicted branches |")
    print("|---|---|---:|---:|---:|---:|")
    for era, modern, n, per in ERAS:
        for name, path in servers:
            misses = []
            for kib in SWEEP:
                sim = ["--cache-sim=yes", f"--D1={kib * 1024},{kib // 4},64"]
                if kib == MACHINE:
                    sim.append("--branch-sim=yes")
                keep = o.keep and os.path.join(o.keep, f"{name}-{era.split()[0]}-{kib}")
                e = per_request(path, o.e2e, modern, n, per, sim, keep)
                misses.append(e["D1mr"] + e["D1mw"])
                if kib == MACHINE:
                    at = e
            print(f"| {era} | {name} | {at['Ir']:,.0f} | "
                  + " / ".join(f"{max(m, 0):,.0f}" for m in misses)
                  + f" | {at['I1mr']:,.0f} | {at['Bcm'] + at['Bim']:,.0f} |")


if __name__ == "__main__":
    main()
