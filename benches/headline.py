#!/usr/bin/env python3
"""Draws BENCHMARKS.md's headline ratios as one SVG (benches/headline.svg):
sessionreg ÷ each peer, on a log scale, lower is better, with each goal
marked. Standard library only.

Reads what `benches/run.sh report` writes into its results directory:
registry-goals.json (benches/ratios.py --json), e2e-modern.json and
e2e-legacy.json (benches/e2e --json), tasks-goals.json (benches/tasks/ratios.py
--json), and the tables of memory.md (bytes per live session), e2e-rmcp.md
(sessionreg-rmcp's manager) and callgrind.md (instructions against hyper
alone), read as benches/report.py reads them; and, when `benches/run.sh
listen` wrote into the same directory, listen.json and listen-publish.json.
Each is optional: a missing file leaves its rows out.

usage: headline.py RESULTS_DIR OUT.svg [CAPTION]
"""
import json
import math
import os
import sys
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import md_row, number, text  # noqa: E402 (the tables read as report.py reads them)

# The listen goals' absolute bounds, drawn as the figure ÷ the bound.
LISTEN_RSS_BYTES = 20 * 1024
LISTEN_PARKED_NS = 150


def load(d, name):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def rows(d):
    """(section, label, sessionreg ÷ peer, goal or None)."""
    out = []
    reg = load(d, "registry-goals.json")
    if reg:
        for g in reg["goals"]:
            if "sessionreg_idle" in g["goal"]:
                continue
            label = g["goal"].split(": sessionreg")[0]
            peer = g["goal"].split("(")[-1].rstrip(")").replace("÷ ", "").replace(" ≤ 1.0×", "")
            out.append(("registry, ns per operation", f"{label} ÷ {peer}", g["figure"], g["bound"]))
    for name, section, cpu_goal in [("e2e-modern.json", "2026-07-28 tools/call, server CPU and p99", 0.25),
                                    ("e2e-legacy.json", "legacy session churn, server CPU and p99", 0.4)]:
        e = load(d, name)
        if not e:
            continue
        cpu_of = {s["name"]: s["cpu_us"] for s in e["servers"]}
        p99_of = {s["name"]: s["p99_us"] for s in e["servers"]}
        floored = "hyper_floor" in cpu_of and "rmcp" in cpu_of
        floor = cpu_of["hyper_floor"] / cpu_of["rmcp"] if floored else None
        p99_floor = p99_of["hyper_floor"] / p99_of["rmcp"] if floored else None
        for r in e["ratios"]:
            peer = r["to"]
            rmcp = peer == "rmcp"
            # The floor rule of BENCHMARKS.md's goals table (benches/report.py):
            # a goal below hyper alone's figure is retired, drawn without its
            # mark, the floor beside it.
            goal = cpu_goal if rmcp else None
            if rmcp and floor is not None and floor > cpu_goal and r["cpu"] > cpu_goal:
                goal = None
                out.append((section, "CPU floor (hyper alone) ÷ rmcp", floor, None))
            out.append((section, f"CPU per {e['unit']} ÷ {peer}", r["cpu"], goal))
            if rmcp:
                p99_goal = 0.5
                if p99_floor is not None and p99_floor > 0.5 and r["p99"] > 0.5:
                    p99_goal = None
                    out.append((section, "p99 floor (hyper alone) ÷ rmcp", p99_floor, None))
                out.append((section, f"p99 latency ÷ {peer}", r["p99"], p99_goal))
    out += table_rows(d)
    tasks = load(d, "tasks-goals.json")
    if tasks:
        for g in tasks["goals"]:
            if g["figure"] is None:
                continue
            x, bound = g["figure"], g["bound"]
            if g.get("inverse"):
                # "rmcp ÷ sessionreg ≥ 10": drawn as sessionreg ÷ rmcp ≤ 0.1.
                x, bound = 1 / x, 1 / bound
            out.append(("tasks", g["label"], x, bound))
    return out


def table_rows(d):
    """The rows read from the steps' markdown tables and the listen step's
    JSON: memory, sessionreg-rmcp, the floor in instructions, listen."""
    out = []
    memory = text(d, "memory.md")
    if memory:
        ours = md_row(memory, "sessionreg")
        for peer, goal in [("sharded_slab", 1.3), ("sharded_slab_id128", None)]:
            theirs = md_row(memory, peer)
            if ours and theirs:
                out.append(("memory, heap bytes per live session at 100k", f"÷ {peer}",
                            number(ours[1]) / number(theirs[1]), goal))
    rmcp = text(d, "e2e-rmcp.md")
    local = md_row(rmcp, "local", ratios=True) if rmcp else None
    if local and len(local) > 2:
        out.append(("sessionreg-rmcp, legacy churn, server CPU",
                    "RegistrySessionManager ÷ LocalSessionManager", number(local[2]), None))
    callgrind = text(d, "callgrind.md")
    ours = md_row(callgrind, "mcp_server") if callgrind else None
    floor = md_row(callgrind, "hyper_floor") if callgrind else None
    if ours and floor and len(ours) == len(floor) == 3:
        for column, what in [(1, "2026-07-28 tools/call"), (2, "legacy session")]:
            ir, floor_ir = number(ours[column].split("/")[0]), number(floor[column].split("/")[0])
            out.append(("the floor, instructions per request (callgrind)",
                        f"{what} ÷ hyper alone", ir / floor_ir, 2.0))
    listen = load(d, "listen.json")
    rss = (listen or {}).get("rss_h1", {})
    ours = rss.get("mcp_server", {}).get("per_listener_bytes")
    if ours:
        out.append(("listen", "RSS per idle listener ÷ its goal (20 KiB)",
                    ours / LISTEN_RSS_BYTES, 1.0))
        for peer in ("python_sdk", "typescript_sdk", "hyper_alone"):
            theirs = rss.get(peer, {}).get("per_listener_bytes")
            if theirs:
                out.append(("listen", f"RSS per idle listener ÷ {peer}", ours / theirs, None))
    publish = load(d, "listen-publish.json")
    parked = (publish or {}).get("ns_per_listener", {}).get("tools_tokio/1000000")
    if parked:
        out.append(("listen", "publisher per parked listener at 1M ÷ its goal (150 ns)",
                    parked / LISTEN_PARKED_NS, 1.0))
    return out


def svg(data, caption):
    lo, hi = -3.0, 1.0  # log10 range: 0.001× .. 10×
    left, width, row, top = 430, 420, 22, 50
    sections = []
    for r in data:
        if not sections or sections[-1] != r[0]:
            sections.append(r[0])
    height = top + row * (len(data) + len(sections)) + 40

    def x(v):
        v = min(max(math.log10(max(v, 1e-9)), lo), hi)
        return left + (v - lo) / (hi - lo) * width

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 130}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="20" font-size="15" font-weight="bold">sessionreg ÷ the peer, lower is better '
           '(log scale; | = goal)</text>',
           f'<text x="10" y="38" fill="#555">{escape(caption)}</text>']
    for p in range(int(lo), int(hi) + 1):
        xx = x(10 ** p)
        out.append(f'<line x1="{xx:.1f}" y1="{top - 4}" x2="{xx:.1f}" y2="{height - 30}" '
                   f'stroke="{"#000" if p == 0 else "#ddd"}"/>')
        out.append(f'<text x="{xx:.1f}" y="{height - 16}" text-anchor="middle" fill="#555">'
                   f'{10 ** p:g}×</text>')
    y = top
    section = None
    for sec, label, v, goal in data:
        if sec != section:
            section = sec
            y += row
            out.append(f'<text x="10" y="{y - 6}" font-weight="bold">{escape(sec)}</text>')
        met = goal is None or v <= goal
        color = "#2a7" if v <= 1 else "#c44"
        x0, x1 = sorted((x(1), x(v)))
        out.append(f'<text x="{left - 8}" y="{y + 14}" text-anchor="end">{escape(label)}</text>')
        out.append(f'<rect x="{x0:.1f}" y="{y + 4}" width="{max(x1 - x0, 1):.1f}" height="{row - 8}" '
                   f'fill="{color}"/>')
        if goal is not None:
            gx = x(goal)
            out.append(f'<line x1="{gx:.1f}" y1="{y + 1}" x2="{gx:.1f}" y2="{y + row - 1}" '
                       'stroke="#000" stroke-width="2"/>')
        mark = "" if goal is None else (" ✓" if met else " ✗")
        out.append(f'<text x="{left + width + 6}" y="{y + 14}">{v:.3g}×{mark}</text>')
        y += row
    out.append('</svg>')
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    data = rows(sys.argv[1])
    if not data:
        sys.exit(f"headline.py: no results in {sys.argv[1]}")
    with open(sys.argv[2], "w") as f:
        f.write(svg(data, sys.argv[3] if len(sys.argv) > 3 else ""))


if __name__ == "__main__":
    main()
