#!/usr/bin/env python3
"""Instructions (callgrind's Ir) and heap allocations per operation, in one
table: deterministic figures that a loaded machine cannot move, so that a
regression shows as a number. `benches/run.sh callgrind` builds the binaries
and calls this.

Every figure is measured at n and at 3n operations, and reported as
(X(3n) - X(n)) / 2n: setup (a prefill, a runtime, thread-locals, a server's
start, the harness's checks) cancels out.

* Registry operations (benches/profile.rs, one thread): `life` (mint,
  insert, get and clone out, drop, remove), `get` (a random one of 1,000
  live sessions), `stale` (a removed id). Allocations from the counting
  allocator the binary installs.
* Task operations (benches/tasks/benches/tasks_profile.rs, 1,000 running
  tasks): `life` and `get` as the timed task bench runs them (cleanups
  included), and the floors under a get (`floor` and `floor_window`: the
  timed bench's `tasks_floor/slot_read` and `slot_read_window`; these rows
  show the second executing as many instructions as the store's get).
  Allocations from the counting allocator.
* A request of each era, server side: examples/mcp_server and rmcp 3.11
  (e2e-rmcp's rmcp_server; `--json-response` for the modern era, the same
  answer shape) and the floor, hyper alone answering the same bytes
  (e2e-rmcp's hyper_floor, as the e2e step runs it), run under callgrind, driven by benches/e2e (`--url --pid`,
  two connections); the server's instructions. Allocations: the calls to
  malloc, calloc, realloc and posix_memalign in the same callgrind profile
  (the servers' own allocator is the system's). A legacy session is three
  requests (initialize, notifications/initialized, DELETE): per session ÷ 3.

usage: callgrind.py --profile BIN --tasks-profile BIN --e2e BIN
                    --mcp-server BIN --rmcp-server BIN [--hyper-floor BIN]
                    [--only registry|tasks|servers]
"""
import argparse
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time

PEERS = ["sessionreg", "sessionreg_idle", "moka", "sharded_slab", "sharded_slab_id128",
         "dashmap", "dashmap_id128", "scc", "scc_id128", "papaya", "papaya_id128",
         "mutex_slab", "mutex_slab_id128", "rwlock_hashmap", "rwlock_hashmap_id128",
         "tokio_rwlock_string", "tokio_rwlock_string_rng"]
ALLOC = {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign"}


def callgrind(cmd):
    """(Ir, allocations) of one in-process run: callgrind's total from its
    stderr, the counting allocator's from the last stdout line."""
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd,
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"callgrind.py: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    ir = int(re.search(r"Collected : (\d+)", p.stderr).group(1))
    allocs = int(re.search(r"allocations: (\d+)", p.stdout).group(1))
    return ir, allocs


def per_op(cmd_at, n):
    ir1, a1 = callgrind(cmd_at(n))
    ir3, a3 = callgrind(cmd_at(3 * n))
    return (ir3 - ir1) / (2 * n), (a3 - a1) / (2 * n)


def parse_profile(path):
    """(Ir total, calls to the allocator) of a callgrind output file."""
    names, total, calls = {}, None, 0
    current_cfn = None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
            m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
            if m:
                ident, name = m.group(1), m.group(2)
                if name:
                    names[ident] = name.strip()
                if line.startswith("cfn="):
                    current_cfn = names.get(ident)
                continue
            if line.startswith("calls=") and current_cfn is not None:
                base = current_cfn.split("'")[0]
                if base in ALLOC:
                    calls += int(line.split("=")[1].split()[0])
    return total, calls


def server_run(server_cmd, e2e, units, modern, keep=None, simulate=(), parse=None):
    """(Ir, allocator calls) of a server under callgrind driven through
    `units` units by benches/e2e; its profile is kept at `keep` if given.
    `simulate`: callgrind's options that simulate the caches and the branch
    predictor (`--cache-sim=yes`, ...); `parse` reads the profile instead of
    `parse_profile` (as `event_totals` does)."""
    out = keep or tempfile.mktemp(prefix="cg-", suffix=".out")
    env = dict(os.environ, RUST_LOG="warn")
    sim = list(simulate)
    srv = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + sim + server_cmd
                           + ["--addr", "127.0.0.1:0", "--max-sessions", "20000",
                              "--idle-timeout-ms", "3600000"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    line = srv.stdout.readline()
    url = line.strip().removeprefix("listening on ")
    if not url.startswith("http://"):
        srv.kill()
        sys.exit(f"callgrind.py: {server_cmd[0]} printed {line!r}")
    args = [e2e, "--url", url, "--pid", str(srv.pid), "--rounds", "1", "--clients", "2",
            "--warm-up", "0", "--idle", "0"]
    args += ["--modern", "--requests", str(units)] if modern else ["--sessions", str(units)]
    p = subprocess.run(args, capture_output=True, text=True)
    srv.send_signal(signal.SIGTERM)
    try:
        srv.wait(timeout=120)
    except subprocess.TimeoutExpired:
        srv.kill()
        srv.wait()
    if p.returncode != 0:
        sys.exit(f"callgrind.py: the e2e client against {server_cmd[0]} failed:\n{p.stdout[-1500:]}{p.stderr[-1500:]}")
    for _ in range(50):
        if os.path.exists(out) and os.path.getsize(out) > 0:
            break
        time.sleep(0.1)
    result = (parse or parse_profile)(out)
    if keep is None:
        os.remove(out)
    return result


def event_totals(path):
    """Every event's total in a callgrind output file, by its name (`Ir`,
    and with the simulation `D1mr`, `Bcm`, ...)."""
    names, totals = [], []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith(("summary:", "totals:")):
                totals = [int(v) for v in line.split()[1:]]
    return dict(zip(names, totals))


def main():
    ap = argparse.ArgumentParser()
    for a in ["--profile", "--tasks-profile", "--e2e", "--mcp-server", "--rmcp-server",
              "--hyper-floor"]:
        ap.add_argument(a)
    ap.add_argument("--only")
    ap.add_argument("--render", nargs="+")
    o = ap.parse_args()
    if o.render:
        render_saved(o.render)
        return
    rows = []  # (what, who, Ir per op, allocations per op)

    if o.only in (None, "registry"):
        for w, n in [("life", 10000), ("get", 20000), ("stale", 20000)]:
            for p in PEERS:
                ir, al = per_op(lambda k: [o.profile, w, p, str(k)], n)
                rows.append((f"registry: {w}", p, ir, al))
    if o.only in (None, "tasks"):
        for w, peers, n in [("life", ["sessionreg", "sessionreg_spawn", "moka", "rmcp"], 2000),
                            ("get", ["sessionreg", "sessionreg_parsed", "moka", "rmcp", "floor"]
                             # the windowed floor is x86-64 assembly
                             + (["floor_window"] if platform.machine() == "x86_64" else []),
                             5000)]:
            for p in peers:
                ir, al = per_op(lambda k: [o.tasks_profile, w, p, str(k), "1000"], n)
                rows.append((f"task at 1k running: {w}", p, ir, al))
    if o.only in (None, "servers"):
        for era, modern, n, per in [("2026-07-28 tools/call, per request", True, 2000, 1),
                                    ("legacy session (3 requests), per request", False, 700, 3)]:
            servers = [("mcp_server", [o.mcp_server]),
                       ("rmcp", [o.rmcp_server] + (["--json-response"] if modern else []))]
            if o.hyper_floor:
                servers.append(("hyper_floor", [o.hyper_floor]))
            for who, cmd in servers:
                ir1, a1 = server_run(cmd, o.e2e, n, modern)
                ir3, a3 = server_run(cmd, o.e2e, 3 * n, modern)
                rows.append((f"server: {era}", who, (ir3 - ir1) / (2 * n) / per,
                             (a3 - a1) / (2 * n) / per))

    render(rows)


def render(rows):
    """One table per kind of operation: a row per peer, a column per
    operation, each cell 'instructions / allocations'."""
    print("Instructions (callgrind Ir) / heap allocations per operation, "
          "(X(3n) − X(n)) ÷ 2n; lower is better:\n")
    kinds = []
    for what, who, ir, al in rows:
        kind = what.split(":")[0]
        if kind not in kinds:
            kinds.append(kind)
    for kind in kinds:
        mine = [r for r in rows if r[0].split(":")[0] == kind]
        whos, ops = [], []
        for what, who, _, _ in mine:
            if who not in whos:
                whos.append(who)
            if what not in ops:
                ops.append(what)
        cell = {(what, who): (ir, al) for what, who, ir, al in mine}
        print(f"| {kind} | " + " | ".join(op.split(": ", 1)[1] for op in ops) + " |")
        print("|---|" + "---:|" * len(ops))
        for who in whos:
            cells = []
            for op in ops:
                if (op, who) in cell:
                    ir, al = cell[(op, who)]
                    al = 0.0 if abs(al) < 0.005 else al  # -0.00 from a freed cache
                    cells.append(f"{ir:,.0f} / {al:.2f}")
                else:
                    cells.append("")
            print(f"| {who} | " + " | ".join(cells) + " |")
        print()


def render_saved(paths):
    """Renders the rows of earlier runs' tables (`--render FILE...`): the
    lines '| what | who | instructions | allocations |' of this script's
    row format."""
    rows = []
    for path in paths:
        with open(path) as f:
            for line in f:
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 4 and ":" in cells[0] and cells[2].replace(",", "").isdigit():
                    rows.append((cells[0], cells[1], float(cells[2].replace(",", "")),
                                 float(cells[3])))
    render(rows)


if __name__ == "__main__":
    main()
