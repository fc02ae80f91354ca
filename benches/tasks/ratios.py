#!/usr/bin/env python3
"""Turns criterion runs of benches/tasks/benches/tasks.rs into the tables of
BENCHMARKS.md's "Tasks (issue 20)": ns per operation, ratios within the same
run, and issue 20's goals checked.

With several criterion output directories (one per run, as benches/run.sh
makes them), each figure is the median of the runs' medians, and the goals
are also shown run by run (on a shared machine a burst of load from
elsewhere slows whichever function is measuring at the time).

usage: ratios.py <criterion output dir, e.g. target/criterion> [more dirs...]
"""
import json
import os
import sys

SIZES = [1000, 10000, 100000]
LIFE = ["sessionreg", "sessionreg_spawn", "moka", "rmcp"]
GET = ["sessionreg", "sessionreg_parsed", "moka", "rmcp"]


def run_median(root, group, fid):
    path = os.path.join(root, group, *fid.split("/"), "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def ns(x):
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}"


def ratio(x):
    if x >= 100:
        return f"{x:,.0f}×"
    if x >= 10:
        return f"{x:.1f}×"
    return f"{x:.2f}×"


def main():
    roots = sys.argv[1:]
    if not roots:
        sys.exit(__doc__)

    def per_run(group, fid):
        return [run_median(r, group, fid) for r in roots]

    def t(group, fid):
        return median(per_run(group, fid))

    life = {(p, n): t("tasks_life", f"{p}/{n}") for p in LIFE for n in SIZES}
    get = {(p, n): t("tasks_get", f"{p}/{n}") for p in GET for n in SIZES}
    note = f"median of {len(roots)} runs' medians" if len(roots) > 1 else "one run"

    print(f"A task's life (create, three gets, complete, one get of the result), ns ({note}):\n")
    print("| running tasks | " + " | ".join(LIFE) + " | rmcp ÷ sessionreg | rmcp ÷ sessionreg_spawn | moka ÷ sessionreg |")
    print("|---:|" + "---:|" * (len(LIFE) + 3))
    for n in SIZES:
        row = [ns(life[(p, n)]) for p in LIFE]
        row += [ratio(life[("rmcp", n)] / life[("sessionreg", n)]),
                ratio(life[("rmcp", n)] / life[("sessionreg_spawn", n)]),
                ratio(life[("moka", n)] / life[("sessionreg", n)])]
        print(f"| {n:,} | " + " | ".join(row) + " |")
    print()

    print(f"A get of a random running task, ns ({note}):\n")
    print("| running tasks | " + " | ".join(GET) + " | sessionreg ÷ moka | rmcp ÷ sessionreg |")
    print("|---:|" + "---:|" * (len(GET) + 2))
    for n in SIZES:
        row = [ns(get[(p, n)]) for p in GET]
        row += [ratio(get[("sessionreg", n)] / get[("moka", n)]),
                ratio(get[("rmcp", n)] / get[("sessionreg", n)])]
        print(f"| {n:,} | " + " | ".join(row) + " |")
    print()

    pick = {n: t("tasks_floor", f"pick/{n}") for n in SIZES}
    parse = {n: t("tasks_floor", f"parse_id/{n}") for n in SIZES}
    branchless = {n: t("tasks_floor", f"parse_branchless/{n}") for n in SIZES}
    reap = {n: t("tasks_reap", f"sessionreg/{n}") for n in SIZES}
    uuid = t("tasks_floor", "uuid_v4_string")
    print(f"Floors, ns ({note}):\n")
    print("| running tasks | pick (harness) | pick + parse_id | pick + branch-free decode (experiment) | one reap sweep of sessionreg's store |")
    print("|---:|---:|---:|---:|---:|")
    for n in SIZES:
        print(f"| {n:,} | {ns(pick[n])} | {ns(parse[n])} | {ns(branchless[n])} | {ns(reap[n])} |")
    print(f"\nA v4 UUID minted as text (rmcp's and moka's ids): {ns(uuid)} ns\n")

    print(f"Growth from 1k to 100k running tasks (time at 100k ÷ time at 1k; {note}):\n")
    print("| workload | " + " | ".join(sorted(set(LIFE + GET), key=(LIFE + GET).index)) + " |")
    print("|---|" + "---:|" * len(set(LIFE + GET)))
    peers = sorted(set(LIFE + GET), key=(LIFE + GET).index)
    for name, table, ids in [("life", life, LIFE), ("get", get, GET)]:
        cells = [ratio(table[(p, 100000)] / table[(p, 1000)]) if p in ids else "" for p in peers]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()

    def goals(l, g):
        out = []
        # The life against rmcp is sessionreg_spawn's: the same work as
        # rmcp's life (the work spawned on a tokio task, a oneshot, the
        # yields of a poller); sessionreg's bare life spawns nothing.
        x = l[("rmcp", 10000)] / l[("sessionreg_spawn", 10000)]
        out.append(("life: rmcp ÷ sessionreg_spawn at 10k ≥ 10", x, x >= 10))
        x = g[("rmcp", 10000)] / g[("sessionreg", 10000)]
        out.append(("get: rmcp ÷ sessionreg at 10k ≥ 10", x, x >= 10))
        for w, table, p in [("life", l, "sessionreg"), ("life", l, "sessionreg_spawn"),
                            ("get", g, "sessionreg")]:
            x = table[(p, 100000)] / table[(p, 1000)]
            out.append((f"{w}: {p} at 100k ÷ at 1k ≤ 1.5", x, x <= 1.5))
        for n in SIZES:
            x = g[("sessionreg", n)] / g[("moka", n)]
            out.append((f"get: sessionreg ÷ moka at {n // 1000}k ≤ 0.7", x, x <= 0.7))
        return out

    print("Goals of issue 20:\n")
    header = "| goal | " + ("figure | " if len(roots) == 1 else "median | " +
                             " | ".join(f"run {i + 1}" for i in range(len(roots))) + " | ") + "verdict |"
    print(header)
    print("|---|" + "---:|" * (1 if len(roots) == 1 else 1 + len(roots)) + "---|")
    runs = []
    for r in roots:
        l = {(p, n): run_median(r, "tasks_life", f"{p}/{n}") for p in LIFE for n in SIZES}
        g = {(p, n): run_median(r, "tasks_get", f"{p}/{n}") for p in GET for n in SIZES}
        runs.append(goals(l, g))
    for i, (name, x, ok) in enumerate(goals(life, get)):
        cells = [f"{x:.2f}"]
        if len(roots) > 1:
            cells += [f"{run[i][1]:.2f}" for run in runs]
        print(f"| {name} | " + " | ".join(cells) + f" | {'met' if ok else 'missed'} |")


if __name__ == "__main__":
    main()
