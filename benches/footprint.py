#!/usr/bin/env python3
"""The memory one 2026-07-28 request touches, by where it lives: every load
and store a server makes, traced by valgrind's lackey
(`--trace-mem=yes`), cut into windows of one request's worth of
accesses, and the distinct 64-byte lines in each window counted by the
mapping they fall in (`/proc/<pid>/maps`, read while the server runs);
beside them, the bytes a request loads from and stores to each mapping.

What `cache_sim.py`'s sweep shows as a whole (a request's L1 data misses
fall off once the cache holds what it touches) this splits: a worker
thread's stack (an anonymous read-write mapping of Rust's 2 MiB thread
stack size), the malloc heaps (the main one and the worker's arena),
and the binary's read-only data (its constants, tables and vtables;
`r--p`). The server runs on one worker thread (`TOKIO_WORKER_THREADS=1`),
driven by benches/e2e over two connections: one client run to warm it,
then one traced, of `--requests` requests and those benches/e2e always
sends first in `--modern` to check the answer (200; read from its
output). Slow: about a minute a server for 100 requests (lackey's trace
goes through Python).

usage: footprint.py --e2e BIN --server NAME=BIN [--server ...] [--requests N]
"""
import argparse
import collections
import os
import re
import signal
import subprocess
import sys
import tempfile
import time


def drive(e2e, url, pid, requests):
    """Runs the client for `requests` requests; returns how many it sent in
    all: those and the ones it checks the answer with first (its line
    `checked <server>: N requests, all answered`)."""
    p = subprocess.run([e2e, "--url", url, "--pid", str(pid), "--rounds", "1", "--clients", "2",
                        "--warm-up", "0", "--idle", "0", "--modern", "--requests", str(requests)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"footprint.py: the e2e client failed:\n{p.stdout[-1500:]}{p.stderr[-1500:]}")
    checked = re.search(r"^checked .*: (\d+) requests, all answered$", p.stdout, re.M)
    if checked is None:
        sys.exit(f"footprint.py: the e2e client printed no check line:\n{p.stdout[-1500:]}")
    return requests + int(checked.group(1))


def mappings(pid):
    """(low, high, label) of each mapping of the running server."""
    out = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split()
            low, high = (int(x, 16) for x in fields[0].split("-"))
            perms, path = fields[1], fields[5] if len(fields) > 5 else ""
            size = (high - low) >> 10
            if path.startswith("/"):
                label = f"{os.path.basename(path)} ({perms})"
            elif size == 2048 and perms.startswith("rw"):
                label = "a thread's stack (2 MiB)"
            else:
                label = f"anonymous {perms} {size} KiB at {low:#x}"
            out.append((low, high, label))
    return out


def measure(server, e2e, requests):
    """{label: (distinct lines, bytes loaded, bytes stored) per request},
    and the loads and stores a request makes."""
    log = tempfile.mktemp(prefix="lackey-", suffix=".log")
    env = dict(os.environ, RUST_LOG="warn", TOKIO_WORKER_THREADS="1")
    srv = subprocess.Popen(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={log}",
                            server, "--addr", "127.0.0.1:0", "--max-sessions", "20000",
                            "--idle-timeout-ms", "3600000"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        url = srv.stdout.readline().strip().removeprefix("listening on ")
        drive(e2e, url, srv.pid, 200)
        maps = mappings(srv.pid)
        time.sleep(0.5)
        start = os.path.getsize(log)
        served = drive(e2e, url, srv.pid, requests)
        time.sleep(0.5)
        end = os.path.getsize(log)
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait()
    lines, moved = [], collections.Counter()
    where = {}

    def label(line):
        if line not in where:
            address = line << 6
            where[line] = next((name for low, high, name in maps if low <= address < high),
                               "unmapped")
        return where[line]

    with open(log, "rb") as f:
        f.seek(start)
        for raw in f.read(end - start).decode(errors="replace").splitlines():
            # " L addr,size", " S ...", " M ..." (a modify: a load and a
            # store); instruction fetches are "I".
            if raw[:2] in (" L", " S", " M"):
                address, size = raw[3:].split(",")
                line = int(address, 16) >> 6
                lines.append(line)
                if raw[1] in "LM":
                    moved[(label(line), "L")] += int(size)
                if raw[1] in "SM":
                    moved[(label(line), "S")] += int(size)
    os.unlink(log)
    per = len(lines) // served
    counts, windows = collections.Counter(), 0
    for at in range(0, len(lines) - per + 1, per):
        windows += 1
        for line in set(lines[at:at + per]):
            counts[label(line)] += 1
    return ({k: (v / windows, moved[(k, "L")] / served, moved[(k, "S")] / served)
             for k, v in counts.items()}, per)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--e2e", required=True)
    ap.add_argument("--server", action="append", required=True, help="NAME=BIN")
    ap.add_argument("--requests", type=int, default=100)
    o = ap.parse_args()
    for name, path in (s.split("=", 1) for s in o.server):
        counts, per = measure(path, o.e2e, o.requests)
        total = sum(lines for lines, _, _ in counts.values())
        print(f"\n{name}: {per:,} loads and stores a request; distinct 64-byte lines a request, "
              f"{total:,.0f} ({total * 64 / 1024:.1f} KiB):\n")
        print("| where | lines | KiB | KB loaded | KB stored |")
        print("|---|---:|---:|---:|---:|")
        for label, (lines, loaded, stored) in sorted(counts.items(), key=lambda kv: -kv[1][0]):
            if lines >= 2:
                print(f"| {label} | {lines:,.0f} | {lines * 64 / 1024:.1f} "
                      f"| {loaded / 1000:.1f} | {stored / 1000:.1f} |")


if __name__ == "__main__":
    main()
