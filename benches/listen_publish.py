#!/usr/bin/env python3
"""The publisher's cost per matching listener (benches/listen_publish.rs),
as one table: criterion's time per publication ÷ the listeners, beside the
deterministic figures of the same code (instructions per listener from
callgrind, allocations per publication and heap bytes per idle listener
from the counting allocator), and the cost of opening one more listener on
a kind and on one resource URI.

    cargo bench --bench listen_publish                       # criterion
    python3 benches/listen_publish.py --criterion target/criterion \\
        --bin target/release/deps/listen_publish-HASH [--json out.json]

Instructions: each run under callgrind counts only inside `publish_once`
(`--collect-atstart=no --toggle-collect`), at N and 3N listeners, P
publications each: Ir ÷ (listeners × P) at each size (the fixed part of a
publication is noise beside N listeners), and the marginal
(Ir(3N) − Ir(N)) ÷ (2N × P), which also carries what changes with the
index's size (a larger table's empty slots walked). Opening: the whole run
at N and 3N listens, (Ir(3N) − Ir(N)) ÷ 2N: what one more listen costs at
that size (one URI's listeners: only at 1,000; its join is O(N)).
"""
import argparse
import json
import os
import re
import subprocess
import sys

GROUPS = [("tools", "toolsListChanged, bodies read between rounds (no waker registered)"),
          ("uri", "resources/updated of one URI, bodies read between rounds"),
          ("tools_tokio", "toolsListChanged, each body read by a parked tokio task (its wake included)")]


def criterion_rows(root):
    rows = {}
    for group, _ in GROUPS:
        # criterion names a group's directory after it, "/" made "_".
        d = os.path.join(root, f"listen_publish_{group}")
        if not os.path.isdir(d):
            continue
        for n in os.listdir(d):
            est = os.path.join(d, n, "new", "estimates.json")
            if n.isdigit() and os.path.exists(est):
                with open(est) as f:
                    e = json.load(f)
                rows[(group, int(n))] = e["median"]["point_estimate"]
    return rows


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"listen_publish.py: {' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    return p


def callgrind(cmd, toggle=None):
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    if toggle:
        vg += ["--collect-atstart=no", f"--toggle-collect={toggle}"]
    p = run(vg + cmd)
    return int(re.search(r"Collected : (\d+)", p.stderr).group(1)), p.stdout


def field(stdout, name):
    m = re.search(rf"{name}: ([\d.]+)", stdout)
    return float(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--criterion", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--json")
    ap.add_argument("--callgrind-n", type=int, default=10_000,
                    help="listeners of toolsListChanged under callgrind (N and 3N)")
    ap.add_argument("--callgrind-uri-n", type=int, default=1_000,
                    help="listeners of one URI under callgrind (N and 3N)")
    ap.add_argument("--publications", type=int, default=4)
    ap.add_argument("--counts", default="1000,10000,100000,1000000",
                    help="listener counts of the allocation runs")
    a = ap.parse_args()
    out = {}

    times = criterion_rows(a.criterion)
    sizes = sorted({n for (_, n) in times})
    if times:
        print("Publisher cost per matching listener: criterion's median of the publishing thread's CPU time for one "
              "`Publisher::publish` ÷ the listeners, ns (one run, 10 samples)\n")
        print("| listeners | " + " | ".join(g for g, _ in GROUPS) + " |")
        print("|---:|" + "---:|" * len(GROUPS))
        for n in sizes:
            cells = []
            for g, _ in GROUPS:
                t = times.get((g, n))
                cells.append("—" if t is None else f"{t / n:.1f}")
            print(f"| {n:,} | " + " | ".join(cells) + " |")
        print()
        for g, what in GROUPS:
            print(f"- {g}: {what}")
        print()
        out["ns_per_listener"] = {f"{g}/{n}": t / n for (g, n), t in times.items()}

    # Deterministic: instructions per listener (publish only). A URI's
    # listeners are few in practice and opening N of them on one URI costs
    # O(N²) (its slice is copied whole on every join): its sizes are smaller.
    p = a.publications
    sizes = {"tools": a.callgrind_n, "uri": a.callgrind_uri_n}
    print(f"Deterministic, per publication: instructions inside `publish_once` ({p} publications "
          "at N and 3N listeners) ÷ (listeners × publications), and the marginal cost "
          "(Ir(3N) − Ir(N)) ÷ (2N × publications); allocations counted inside `publish_once` "
          "by the counting allocator\n")
    print("| topic | N | instructions per listener at N | at 3N | marginal, N → 3N | "
          "allocations per publication |")
    print("|---|---:|---:|---:|---:|---:|")
    instr = {}
    for topic in ("tools", "uri"):
        n = sizes[topic]
        ir1, s1 = callgrind([a.bin, "--count", topic, str(n), str(p)], "*publish_once*")
        ir3, _ = callgrind([a.bin, "--count", topic, str(3 * n), str(p)], "*publish_once*")
        at1, at3 = ir1 / (n * p), ir3 / (3 * n * p)
        marginal = (ir3 - ir1) / (2 * n * p)
        allocs = field(s1, "allocations per publication")
        instr[topic] = {"n": n, "at_n": at1, "at_3n": at3, "marginal": marginal,
                        "allocations_per_publication": allocs}
        print(f"| {topic} | {n:,} | {at1:.1f} | {at3:.1f} | {marginal:.1f} | {allocs:.2f} |")
    print()
    out["instructions_per_listener"] = instr

    # Allocations per publication and heap per idle listener, natively.
    print("Counting allocator, natively: heap bytes per idle listener (the layer's own: "
          "entry, queue, body; no socket) and allocations per publication, by count\n")
    print("| listeners | heap bytes per idle listener | allocations per publication (tools) |")
    print("|---:|---:|---:|")
    allocs = {}
    for count in [int(c) for c in a.counts.split(",") if c]:
        s = run([a.bin, "--count", "tools", str(count), str(p)]).stdout
        heap, per_pub = field(s, "heap bytes per idle listener"), field(s, "allocations per publication")
        allocs[count] = {"heap_bytes": heap, "allocations_per_publication": per_pub}
        print(f"| {count:,} | {heap:,.0f} | {per_pub:.2f} |")
    print()
    out["allocations"] = allocs

    # Opening one more listener: a kind against one URI, at two sizes each.
    print("Opening one more listener (the whole listen request through `SessionManager::handle`), "
          "instructions, (Ir(3N) − Ir(N)) ÷ 2N\n")
    print("| topic | N = 1,000 | N = 10,000 |")
    print("|---|---:|---:|")
    opens = {}
    for topic in ("open-tools", "open-uri"):
        cells = []
        for m in (1_000, 10_000):
            if topic == "open-uri" and m > a.callgrind_uri_n:
                cells.append("— (O(N²): not run)")
                continue
            ir1, _ = callgrind([a.bin, "--count", topic, str(m)])
            ir3, _ = callgrind([a.bin, "--count", topic, str(3 * m)])
            per = (ir3 - ir1) / (2 * m)
            opens[f"{topic}/{m}"] = per
            cells.append(f"{per:,.0f}")
        print(f"| {topic[5:]} | " + " | ".join(cells) + " |")
    print()
    out["open_instructions"] = opens

    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
