#!/usr/bin/env python3
"""Turns one criterion run of benches/registry.rs into the ratio tables of
BENCHMARKS.md: each figure ÷ the fastest peer's (sessionreg excluded) in the
same group of the same run, and each goal of issue 14 checked, read from
sessionreg_idle (the registry with an idle timeout, as the HTTP layer runs
it), with sessionreg (no timeout) beside it for reference.

With several criterion output directories (one per run of the bench, as
benches/run.sh makes them), each figure is the median of the runs' medians:
on a shared machine a burst of load from elsewhere can slow whichever
function is measuring at the time, in one run but not in the others.

usage: ratios.py <criterion output dir, e.g. target/criterion> [more dirs...]
"""
import json
import os
import sys

GROUPS = ["life_1t", "life_2t", "mix_2t", "stale"]
PEERS = ["moka", "sharded_slab", "mutex_slab", "dashmap", "scc", "papaya",
         "rwlock_hashmap", "tokio_rwlock_string"]
OURS = ["sessionreg", "sessionreg_idle"]
ALL = OURS + PEERS
LABEL = {
    "life_1t": "one session's life, 1 thread",
    "life_2t": "one session's life, 2 threads",
    "mix_2t": "95% get / 5% churn, 2 threads, 10k live",
    "stale": "lookup of a removed id",
}


def run_median(root, group, fid):
    path = os.path.join(root, group, fid, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def median(roots, group, fid):
    """The median over the runs of each run's median (the middle one of an
    odd number of runs, the mean of the middle two of an even number)."""
    values = sorted(run_median(root, group, fid) for root in roots)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def main():
    roots = sys.argv[1:]
    if not roots:
        sys.exit(__doc__)
    t = {g: {p: median(roots, g, p) for p in ALL} for g in GROUPS}
    floor = {f: median(roots, "floor", f) for f in ["cas", "secret", "arc_clone_drop"]}

    if len(roots) > 1:
        print(f"{len(roots)} runs; each figure is the median of the runs' medians. "
              "Per run, for the two sessionreg ids and the fastest peer of each row:\n")
        print("| workload | id | " + " | ".join(f"run {i + 1}" for i in range(len(roots))) + " |")
        print("|---|---|" + "---:|" * len(roots))
        for g in GROUPS:
            best = min(PEERS, key=lambda p: t[g][p])
            for p in OURS + [best]:
                print(f"| {LABEL[g]} | {p} | "
                      + " | ".join(f"{run_median(r, g, p):.1f}" for r in roots) + " |")
        print()

    print("Medians in ns per operation (2-thread rows: wall time ÷ total ops):\n")
    print("| workload | " + " | ".join(ALL) + " |")
    print("|---|" + "---:|" * len(ALL))
    for g in GROUPS:
        print(f"| {LABEL[g]} | " + " | ".join(f"{t[g][p]:.1f}" for p in ALL) + " |")
    print(f"\nFloors: one uncontended CAS {floor['cas']:.1f} ns; "
          f"one secret drawn as insert draws it {floor['secret']:.1f} ns; "
          f"one Arc clone+drop {floor['arc_clone_drop']:.1f} ns.\n")

    print("Ratios: each figure ÷ the fastest peer's in its row "
          "(lower is better; 1.00 = the fastest peer):\n")
    print("| workload | fastest peer | " + " | ".join(ALL) + " |")
    print("|---|---|" + "---:|" * len(ALL))
    for g in GROUPS:
        best = min(PEERS, key=lambda p: t[g][p])
        print(f"| {LABEL[g]} | {best} | "
              + " | ".join(f"{t[g][p] / t[g][best]:.2f}" for p in ALL) + " |")

    def fastest(g):
        return min(t[g][p] for p in PEERS)

    def goals(ours):
        s = {g: t[g][ours] for g in GROUPS}
        bare = {g: t[g]["sessionreg"] for g in GROUPS}
        physical = 5 * floor["cas"] + floor["secret"]
        return [
            ("1. idle tracking: life, 1 thread ≤ 1.10× sessionreg",
             s["life_1t"] / bare["life_1t"], 1.10),
            ("1. idle tracking: life, 2 threads ≤ 1.10× sessionreg",
             s["life_2t"] / bare["life_2t"], 1.10),
            ("1. idle tracking: 95/5 mix, 2 threads ≤ 1.10× sessionreg",
             s["mix_2t"] / bare["mix_2t"], 1.10),
            ("2. life, 1 thread ≤ 1.5× (5 × floor/cas + floor/secret)",
             s["life_1t"] / physical, 1.5),
            ("3. life, 1 thread ≤ 1.0× the fastest peer",
             s["life_1t"] / fastest("life_1t"), 1.0),
            ("3. life, 2 threads ≤ 0.9× sharded_slab",
             s["life_2t"] / t["life_2t"]["sharded_slab"], 0.9),
            ("3. 95/5 mix, 2 threads ≤ 0.6× the fastest peer",
             s["mix_2t"] / fastest("mix_2t"), 0.6),
            ("3. removed-id lookup ≤ 1.0× sharded_slab",
             s["stale"] / t["stale"]["sharded_slab"], 1.0),
        ]

    print("\nGoals (issue 14), read from sessionreg_idle, in this run:\n")
    print("| goal | sessionreg_idle | (sessionreg, for reference) |")
    print("|---|---:|---:|")
    for (name, value, bound), (_, ref, _) in zip(goals("sessionreg_idle"), goals("sessionreg")):
        verdict = "met" if value <= bound else "missed"
        print(f"| {name} | {value:.2f}× ({verdict}) | {ref:.2f}× |")
    print(f"\n(5 × floor/cas + floor/secret = "
          f"{5 * floor['cas'] + floor['secret']:.1f} ns; "
          f"self-scaling, life 1 → 2 threads: sessionreg_idle "
          f"{t['life_1t']['sessionreg_idle'] / t['life_2t']['sessionreg_idle']:.2f}×, "
          f"sharded_slab {t['life_1t']['sharded_slab'] / t['life_2t']['sharded_slab']:.2f}×)")


if __name__ == "__main__":
    main()
