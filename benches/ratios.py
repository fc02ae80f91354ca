#!/usr/bin/env python3
"""Turns criterion runs of benches/registry.rs into the tables of
BENCHMARKS.md's registry section: median ns per operation, each figure ÷ the
fastest peer's in the same row, and issue 28's goals checked, read from
these tables only.

Groups are found in the runs: life_<T>t, mix_<T>t and stale_<T>t for every
thread count T the bench ran (REGISTRY_THREADS), and floor. With several
criterion output directories (one per run of the bench, as benches/run.sh
makes them), each figure is the median of the runs' medians: on a shared
machine a burst of load from elsewhere can slow whichever function is
measuring at the time, in one run but not in the others.

`--json PATH` also writes the goal figures as JSON (for benches/headline.py).

usage: ratios.py [--json PATH] <criterion output dir, e.g. target/criterion> [more dirs...]
"""
import json
import os
import re
import sys

OURS = ["sessionreg", "sessionreg_idle"]
# Table order: each bare map, then the same map keyed by a 128-bit random id.
PEERS = ["moka", "sharded_slab", "sharded_slab_id128", "dashmap", "dashmap_id128",
         "scc", "scc_id128", "papaya", "papaya_id128", "mutex_slab", "mutex_slab_id128",
         "rwlock_hashmap", "rwlock_hashmap_id128", "tokio_rwlock_string",
         "tokio_rwlock_string_rng"]
# The peers that mint an unguessable id, as sessionreg does.
UNGUESSABLE = ["moka", "tokio_rwlock_string", "tokio_rwlock_string_rng"] + \
    [p for p in PEERS if p.endswith("_id128")]
ALL = OURS + PEERS
WORK = {"life": "one session's life", "mix": "95% get / 5% churn, 10k live",
        "stale": "lookup of a removed id"}


def run_median(root, group, fid):
    path = os.path.join(root, group, fid, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def groups(root):
    """(workload, threads) of every group in a run, sorted."""
    found = []
    for name in os.listdir(root):
        m = re.fullmatch(r"(life|mix|stale)_(\d+)t", name)
        if m:
            found.append((m.group(1), int(m.group(2))))
    order = list(WORK)
    return sorted(found, key=lambda g: (order.index(g[0]), g[1]))


def fmt(x):
    if x >= 1000:
        return f"{x:,.0f}"
    return f"{x:.1f}"


def main():
    args = sys.argv[1:]
    json_path = None
    if args[:1] == ["--json"]:
        json_path, args = args[1], args[2:]
    roots = args
    if not roots:
        sys.exit(__doc__)
    gs = groups(roots[0])
    names = {g: f"{g[0]}_{g[1]}t" for g in gs}
    t = {}
    for g in gs:
        t[g] = {}
        for p in ALL:
            try:
                t[g][p] = median([run_median(r, names[g], p) for r in roots])
            except FileNotFoundError:
                pass
    peers = [p for p in PEERS if all(p in t[g] for g in gs)]
    cols = OURS + peers
    floor = {}
    for f in ["cas", "secret", "rand_u128", "arc_clone_drop"]:
        try:
            floor[f] = median([run_median(r, "floor", f) for r in roots])
        except FileNotFoundError:
            pass
    label = {g: f"{WORK[g[0]]}, {g[1]} thread{'s' if g[1] > 1 else ''}" for g in gs}
    note = f"median of {len(roots)} runs' medians" if len(roots) > 1 else "one run"

    print(f"Median ns per operation ({note}; on T threads: wall time ÷ total operations, "
          "so perfect scaling halves the figure from 1 to 2 threads). "
          "`_id128`: the same map keyed by a random 128-bit id:\n")
    print("| workload | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for g in gs:
        print(f"| {label[g]} | " + " | ".join(fmt(t[g][p]) for p in cols) + " |")
    if floor:
        print("\nFloors, ns: " + "; ".join(f"{k} {v:.1f}" for k, v in floor.items())
              + " (one uncontended CAS; one secret as insert draws it; one "
              "`rand::rng().random::<u128>()`; one Arc clone+drop).")

    print("\nEach figure ÷ the fastest peer's in its row (lower is better); "
          "the fastest peer that mints an unguessable id beside it:\n")
    print("| workload | fastest peer | fastest unguessable-id peer | sessionreg ÷ fastest | "
          "sessionreg ÷ fastest unguessable | sessionreg_idle ÷ sessionreg |")
    print("|---|---|---|---:|---:|---:|")
    for g in gs:
        best = min(peers, key=lambda p: t[g][p])
        safe = min((p for p in peers if p in UNGUESSABLE), key=lambda p: t[g][p])
        s = t[g]["sessionreg"]
        print(f"| {label[g]} | {best} ({fmt(t[g][best])}) | {safe} ({fmt(t[g][safe])}) | "
              f"{s / t[g][best]:.2f}× | {s / t[g][safe]:.2f}× | "
              f"{t[g]['sessionreg_idle'] / s:.2f}× |")

    goals = []
    for g in gs:
        s = t[g]["sessionreg"]
        if g[0] == "life" and g[1] in (1, 2):
            safe = min((p for p in peers if p in UNGUESSABLE), key=lambda p: t[g][p])
            goals.append((f"{label[g]}: sessionreg ≤ 1.0× the fastest unguessable-id peer ({safe})",
                          s / t[g][safe], 1.0))
        if g[0] in ("mix", "stale"):
            best = min(peers, key=lambda p: t[g][p])
            goals.append((f"{label[g]}: sessionreg ahead of every peer (÷ {best} ≤ 1.0×)",
                          s / t[g][best], 1.0))
    for g in gs:
        goals.append((f"{label[g]}: sessionreg_idle ≤ 1.05× sessionreg",
                      t[g]["sessionreg_idle"] / t[g]["sessionreg"], 1.05))
    print("\nGoals (issue 28), read from the tables above:\n")
    print("| goal | figure | status |")
    print("|---|---:|---|")
    for name, x, bound in goals:
        print(f"| {name} | {x:.2f}× | {'met' if x <= bound else 'missed'} |")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"goals": [{"goal": n, "figure": x, "bound": b} for n, x, b in goals],
                       "ns": {names[g]: t[g] for g in gs}, "floor": floor}, f, indent=1)


if __name__ == "__main__":
    main()
