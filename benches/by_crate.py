#!/usr/bin/env python3
"""Where a 2026-07-28 request's instructions and stores go, by crate: each
server's callgrind profile (`callgrind.py`'s runs: the server under
valgrind on one worker thread, driven by benches/e2e over two connections,
at n and 3n requests, (X(3n) - X(n)) / 2n), its exclusive cost per source
line's function (`callgrind_annotate --inclusive=no`) summed by the crate
the code is in. Code of the standard library inlined into a function
counts for that function's crate (a `memcpy` of ours is ours), except
glibc's `memcpy`/`memmove` and `malloc`/`free`, which are rows of their
own. Stores are callgrind's `Dw` (store instructions, not bytes), counted
with `--cache-sim=yes`.

Section 7 compares the totals with hyper alone's; this says which part of
the difference is whose: the same HTTP/1 I/O (hyper, httparse, tokio,
bytes) in both, and beside it what only ours does.

usage: by_crate.py --e2e BIN --server NAME=BIN [--server NAME=BIN ...] [--requests N] [--keep DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import callgrind  # noqa: E402  (benches/callgrind.py)

EVENTS = [("Ir", "instructions"), ("Dw", "stores")]

# Crates grouped as one row: the HTTP/1 I/O hyper alone does too.
IO = {"hyper", "httparse", "tokio", "bytes", "mio", "http-body", "http-body-util",
      "atomic-waker", "hyper-util", "socket2"}


def row_of_crate(crate):
    if crate in IO:
        return IO_ROW
    if crate in ("serde_json", "serde_core", "serde"):
        return "JSON (serde_json)"
    if crate == "http":
        return "headers, URI (http)"
    return "other crates"


IO_ROW = "HTTP/1 I/O (hyper, httparse, tokio, bytes)"


def row_of_name(name):
    """The row of standard-library code inlined into the function `name`."""
    for pattern, row in [(r"sessionreg", "ours (sessionreg)"),
                         (r"mcp_server|mcp_app|hyper_floor", "the example's or the floor's service"),
                         (r"serde_json|serde_core", "JSON (serde_json)"),
                         (r"\bhttp::", "headers, URI (http)"),
                         (r"hyper|httparse|tokio|bytes|mio|http_body", IO_ROW)]:
        if re.search(pattern, name):
            return row
    return "other"


def row_of(entry):
    """The row of one `file:function` entry of callgrind_annotate."""
    if "memmove" in entry or "memcpy" in entry:
        return "memcpy (glibc)"
    if "malloc.c" in entry:
        return "malloc, free (glibc)"
    path, _, name = entry.partition(":")
    crate = re.search(r"/registry/src/[^/]+/([A-Za-z0-9_\-]+?)-\d+\.\d+\.\d+[^/]*/", path)
    if crate:
        return row_of_crate(crate.group(1))
    if "/rustc/" in path:
        return row_of_name(name)
    if "/examples/" in path or "/benches/" in path or path.startswith(("examples/", "benches/")):
        return "the example's or the floor's service"
    if re.search(r"(^|/)src/", path):
        return "ours (sessionreg)"
    return "other"


def by_function(path, event):
    """Exclusive `event` per `file:function` in one profile."""
    out = subprocess.run(["callgrind_annotate", f"--show={event}", f"--sort={event}",
                          "--inclusive=no", "--threshold=100", "--auto=no", path],
                         capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.*?)(?: \[[^\]]*\])?$", line)
        if m and "PROGRAM TOTALS" not in m.group(2):
            entry = m.group(2)
            costs[entry] = costs.get(entry, 0) + int(m.group(1).replace(",", ""))
    return costs


def per_request(name, binary, e2e, n, keep):
    """{event: {row: per request}} for one server; its profiles are kept
    as `{keep}/{name}-{requests}.out` (by its name: two builds of one
    binary share a file name)."""
    profiles = {}
    for k in (n, 3 * n):
        out = os.path.join(keep, f"{name}-{k}.out")
        callgrind.server_run([binary], e2e, k, True, simulate=["--cache-sim=yes"],
                             parse=callgrind.event_totals, keep=out)
        profiles[k] = out
    result = {}
    for event, _ in EVENTS:
        one, three = (by_function(profiles[k], event) for k in (n, 3 * n))
        rows = {}
        for entry in set(one) | set(three):
            rows[row_of(entry)] = rows.get(row_of(entry), 0) + three.get(entry, 0) - one.get(entry, 0)
        result[event] = {row: v / (2 * n) for row, v in rows.items()}
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--e2e", required=True)
    ap.add_argument("--server", action="append", required=True, help="NAME=BIN")
    ap.add_argument("--requests", type=int, default=1000, help="n (the runs are n and 3n)")
    ap.add_argument("--keep", default=None, help="a directory to keep the profiles in")
    o = ap.parse_args()
    os.environ["TOKIO_WORKER_THREADS"] = "1"  # the servers inherit it
    keep = o.keep or tempfile.mkdtemp(prefix="by-crate-")
    os.makedirs(keep, exist_ok=True)
    servers = [s.split("=", 1) for s in o.server]
    if len({name for name, _ in servers}) != len(servers):
        sys.exit("by_crate.py: each --server needs a name of its own")
    results = {name: per_request(name, binary, o.e2e, o.requests, keep) for name, binary in servers}
    names = [name for name, _ in servers]
    for event, what in EVENTS:
        rows = sorted(set().union(*(results[n][event] for n in names)),
                      key=lambda r: -results[names[0]][event].get(r, 0))
        print(f"\n| {what} per 2026-07-28 `tools/call` | " + " | ".join(names) + " |")
        print("|---|" + "---:|" * len(names))
        for row in rows:
            values = [results[n][event].get(row, 0) for n in names]
            if all(abs(v) < 0.5 for v in values):
                continue
            print(f"| {row} | " + " | ".join(f"{v:,.0f}" for v in values) + " |")
        print("| all | " + " | ".join(f"{sum(results[n][event].values()):,.0f}" for n in names) + " |")
    if not o.keep:
        for f in os.listdir(keep):
            os.remove(os.path.join(keep, f))
        os.rmdir(keep)


if __name__ == "__main__":
    main()
