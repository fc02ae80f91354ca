#!/usr/bin/env python3
"""Where a 2026-07-28 `tools/call` of mcp_server goes, per request: the
inclusive instructions of the steps BENCHMARKS.md's limits name, from two
callgrind profiles of the server (N and 3N requests sent by benches/e2e,
the official clients' request), (X(3N) - X(N)) / 2N as every server figure
of section 7; beside the whole request and hyper alone's.

usage: server_profile.py --e2e BIN --mcp-server BIN --hyper-floor BIN [--requests N]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in benches/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import callgrind  # noqa: E402  (benches/callgrind.py)

# (label, the functions whose inclusive cost it is, summed).
STEPS = [
    ("the message checked by serde_json (`Message::from_slice`)",
     ["sessionreg::http::wire::jsonrpc::Message::from_slice"]),
    ("the layer's fields walked (`validate::fields`)",
     ["sessionreg::http::modern::validate::fields"]),
    ("the example's handler (`mcp_app::answer`)",
     ["mcp_server::mcp_app::answer::{{closure}}"]),
    ("the answer written (`modern::respond::respond`)",
     ["sessionreg::http::modern::respond::respond"]),
    ("hashed header look-ups (`HeaderMap::get`, `get_all`)",
     ["http::header::map::HeaderMap<T>::get", "http::header::map::HeaderMap<T>::get_all"]),
    ("the allocator (`malloc`, `free`)", ["malloc", "free"]),
]


def inclusive(profile):
    """Each function's inclusive Ir (the largest of its entries: an inlined
    function is listed once per file its code came from)."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", profile],
                         capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(?:\* )?\s*(\S.*?)(?: \[[^\]]*\])?$", line)
        if not m or "=>" in line:
            continue
        name = m.group(2).split(":", 1)[-1].strip()  # after the file's name
        name = re.sub(r" \([\d,]+x\)$", "", name)
        costs[name] = max(costs.get(name, 0), int(m.group(1).replace(",", "")))
    return costs


def per_request(server, e2e, n):
    with tempfile.TemporaryDirectory() as d:
        at = {}
        for units in (n, 3 * n):
            path = os.path.join(d, f"{units}.out")
            total, _ = callgrind.server_run([server], e2e, units, True, keep=path)
            at[units] = (total, inclusive(path))
    (t1, c1), (t3, c3) = at[n], at[3 * n]
    steps = {name: (c3.get(name, 0) - c1.get(name, 0)) / (2 * n) for name in set(c1) | set(c3)}
    return (t3 - t1) / (2 * n), steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--e2e", required=True)
    ap.add_argument("--mcp-server", required=True)
    ap.add_argument("--hyper-floor", required=True)
    ap.add_argument("--requests", type=int, default=2000)
    a = ap.parse_args()
    total, steps = per_request(a.mcp_server, a.e2e, a.requests)
    floor, _ = per_request(a.hyper_floor, a.e2e, a.requests)
    print("Instructions (callgrind Ir, inclusive) per 2026-07-28 `tools/call`, "
          "(X(3N) − X(N)) ÷ 2N:\n")
    print("| step | per request |")
    print("|---|---:|")
    for label, names in STEPS:
        print(f"| {label} | {sum(steps.get(n, 0) for n in names):,.0f} |")
    print(f"| the whole request, mcp_server | {total:,.0f} |")
    print(f"| the whole request, hyper alone | {floor:,.0f} |")
    print(f"| above hyper alone | {total - floor:,.0f} |")


if __name__ == "__main__":
    main()
