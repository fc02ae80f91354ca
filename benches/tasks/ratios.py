#!/usr/bin/env python3
"""Turns criterion runs of benches/tasks/benches/tasks.rs into the tables of
BENCHMARKS.md's "Tasks": ns per operation, ratios within the same run, the
memory hierarchy's floor under a get (tasks_floor/slot_read), and the goals
checked (read from these tables only).

With several criterion output directories (one per run, as benches/run.sh
makes them), each figure is the median of the runs' medians, and the goals
are also shown run by run (on a shared machine a burst of load from
elsewhere slows whichever function is measuring at the time).

usage: ratios.py [--json PATH] <criterion output dir, e.g. target/criterion> [more dirs...]
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
    args = sys.argv[1:]
    json_path = None
    if args[:1] == ["--json"]:
        json_path, args = args[1], args[2:]
    roots = args
    if not roots:
        sys.exit(__doc__)

    def per_run(group, fid):
        return [run_median(r, group, fid) for r in roots]

    def t(group, fid):
        return median(per_run(group, fid))

    def opt(group, fid):
        try:
            return t(group, fid)
        except FileNotFoundError:
            return None  # rmcp above TASKS_RMCP_MAX

    life = {(p, n): opt("tasks_life", f"{p}/{n}") for p in LIFE for n in SIZES}
    get = {(p, n): opt("tasks_get", f"{p}/{n}") for p in GET for n in SIZES}
    floor = {n: opt("tasks_floor", f"slot_read/{n}") for n in SIZES}
    window = {n: opt("tasks_floor", f"slot_read_window/{n}") for n in SIZES}
    note = f"median of {len(roots)} runs' medians" if len(roots) > 1 else "one run"

    def cell(x):
        return "—" if x is None else ns(x)

    def div(a, b):
        return "—" if a is None or b is None else ratio(a / b)

    print(f"A task's life (create, three gets, complete, one get of the result), ns ({note}):\n")
    print("| running tasks | " + " | ".join(LIFE) + " | rmcp ÷ sessionreg_spawn | moka ÷ sessionreg |")
    print("|---:|" + "---:|" * (len(LIFE) + 2))
    for n in SIZES:
        row = [cell(life[(p, n)]) for p in LIFE]
        row += [div(life[("rmcp", n)], life[("sessionreg_spawn", n)]),
                div(life[("moka", n)], life[("sessionreg", n)])]
        print(f"| {n:,} | " + " | ".join(row) + " |")
    print()

    print(f"A get of a random running task, ns ({note}); the floor: one random slot of the store's size read over the same working set (`tasks_floor/slot_read`); the window: the same read executing as many instructions as the store's get, the extra ones register-only (`slot_read_window`):\n")
    print("| running tasks | floor | window | " + " | ".join(GET) + " | sessionreg_parsed ÷ floor | sessionreg_parsed ÷ window | sessionreg ÷ moka | rmcp ÷ sessionreg |")
    print("|---:|---:|---:|" + "---:|" * (len(GET) + 4))
    for n in SIZES:
        row = [cell(floor[n]), cell(window[n])] + [cell(get[(p, n)]) for p in GET]
        row += [div(get[("sessionreg_parsed", n)], floor[n]),
                div(get[("sessionreg_parsed", n)], window[n]),
                div(get[("sessionreg", n)], get[("moka", n)]),
                div(get[("rmcp", n)], get[("sessionreg", n)])]
        print(f"| {n:,} | " + " | ".join(row) + " |")
    print()

    pick = {n: opt("tasks_floor", f"pick/{n}") for n in SIZES}
    parse = {n: opt("tasks_floor", f"parse_id/{n}") for n in SIZES}
    reap = {n: opt("tasks_reap", f"sessionreg/{n}") for n in SIZES}
    uuid = opt("tasks_floor", "uuid_v4_string")
    print(f"The harness's and the parse's shares, and the reaper, ns ({note}):\n")
    print("| running tasks | pick (harness) | pick + parse_id | one reap sweep of sessionreg's store |")
    print("|---:|---:|---:|---:|")
    for n in SIZES:
        print(f"| {n:,} | {cell(pick[n])} | {cell(parse[n])} | {cell(reap[n])} |")
    print(f"\nA v4 UUID minted as text (rmcp's and moka's ids): {cell(uuid)} ns\n")

    def goals(l, g, f):
        out = []
        # The life against rmcp is sessionreg_spawn's: the same work as
        # rmcp's life (the work spawned on a tokio task, a oneshot, the
        # yields of a poller); sessionreg's bare life spawns nothing.
        def add(name, a, b, bound, op):
            x = None if a is None or b is None else a / b
            out.append((name, x, x is not None and op(x, bound)))
        ge = lambda x, b: x >= b
        le = lambda x, b: x <= b
        add("life at 10k, n = 10,000: rmcp ÷ sessionreg_spawn ≥ 10", l[("rmcp", 10000)], l[("sessionreg_spawn", 10000)], 10, ge)
        add("get at 10k, n = 10,000: rmcp ÷ sessionreg ≥ 10", g[("rmcp", 10000)], g[("sessionreg", 10000)], 10, ge)
        add("get at 100k: the store's lookup (sessionreg_parsed) ≤ 1.5× the slot-read floor", g[("sessionreg_parsed", 100000)], f[100000], 1.5, le)
        add("get at 100k: sessionreg (by text id) ≤ 0.5× moka", g[("sessionreg", 100000)], g[("moka", 100000)], 0.5, le)
        add("life at 100k: sessionreg_spawn ≤ 0.5× moka's life", l[("sessionreg_spawn", 100000)], l[("moka", 100000)], 0.5, le)
        return out

    print("Goals (issue 28; the growth goal of issue 20 retired for the floor):\n")
    header = "| goal | " + ("figure | " if len(roots) == 1 else "median | " +
                             " | ".join(f"run {i + 1}" for i in range(len(roots))) + " | ") + "status |"
    print(header)
    print("|---|" + "---:|" * (1 if len(roots) == 1 else 1 + len(roots)) + "---|")

    def per(r, group, ids):
        out = {}
        for p in ids:
            for n in SIZES:
                try:
                    out[(p, n)] = run_median(r, group, f"{p}/{n}")
                except FileNotFoundError:
                    out[(p, n)] = None
        return out

    runs = []
    for r in roots:
        fl = {}
        for n in SIZES:
            try:
                fl[n] = run_median(r, "tasks_floor", f"slot_read/{n}")
            except FileNotFoundError:
                fl[n] = None
        runs.append(goals(per(r, "tasks_life", LIFE), per(r, "tasks_get", GET), fl))
    final = goals(life, get, floor)
    if json_path:
        import json as js
        bounds = [10, 10, 1.5, 0.5, 0.5]
        labels = ["life at 10k: ÷ rmcp", "get at 10k: ÷ rmcp", "get at 100k: lookup ÷ slot-read floor",
                  "get at 100k: ÷ moka", "life at 100k: ÷ moka"]
        with open(json_path, "w") as f:
            js.dump({"goals": [{"goal": name, "label": labels[i], "figure": x, "bound": bounds[i],
                                "inverse": i < 2} for i, (name, x, ok) in enumerate(final)]}, f, indent=1)
    for i, (name, x, ok) in enumerate(final):
        cells = ["—" if x is None else ratio(x)]
        if len(roots) > 1:
            cells += ["—" if run[i][1] is None else f"{run[i][1]:.2f}" for run in runs]
        print(f"| {name} | " + " | ".join(cells) + f" | {'met' if ok else ('not measured' if x is None else 'missed')} |")


if __name__ == "__main__":
    main()
