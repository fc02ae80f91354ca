#!/usr/bin/env python3
"""Server instructions (callgrind Ir) and heap allocations per request,
examples/mcp_server at two commits (issue 25: the layer's re-lay, within
1.03x of before), the same clients against both, so that only the server
differs. `benches/relay_callgrind.sh` builds the binaries and calls this.

Each figure is (X(3n) - X(n)) / 2n over one server process under
callgrind, as benches/callgrind.py measures its server rows (its
`server_run` and `parse_profile` are used here): the server's start, the
harness's checks and the shutdown cancel out. Allocations are the calls to
malloc, calloc, realloc and posix_memalign in the same profile.

The servers run one tokio worker (TOKIO_WORKER_THREADS=1, unless set):
with two, how the workers park and steal varies from run to run, and so
do the counts (by 2-4%; with one, to about 1%).

Shapes:
* modern: a 2026-07-28 tools/call of echo, no session (benches/e2e --modern);
* legacy session: initialize, notifications/initialized, DELETE
  (benches/e2e), per request (÷ 3);
* legacy call: a 2025-11-25 tools/call of echo inside one open session
  (the client below; one keep-alive connection);
* tasks/get: a 2026-07-28 tasks/get of a working task (the app's `sleep`
  tool called as a task, a new one every 1,000 requests; the client below).

usage: relay_callgrind.py --before BIN --after BIN --e2e BIN [--runs R]
"""
import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in benches/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import callgrind  # noqa: E402  (benches/callgrind.py)

LEGACY = "2025-11-25"
LABELS = {
    "modern": "2026-07-28 `tools/call`",
    "legacy session": "2025-11-25 session (`initialize`, `initialized`, `DELETE`) ÷ 3",
    "legacy call": "2025-11-25 `tools/call` in a session",
    "tasks/get": "2026-07-28 `tasks/get` of a working task",
}
MODERN = "2026-07-28"


class Conn:
    """One keep-alive HTTP/1.1 connection; every answer checked."""

    def __init__(self, url):
        host = url.removeprefix("http://").split("/", 1)[0]
        self.path = "/" + url.removeprefix("http://").split("/", 1)[1]
        h, p = host.rsplit(":", 1)
        self.c = http.client.HTTPConnection(h, int(p))

    def post(self, body, headers):
        h = {"Content-Type": "application/json",
             "Accept": "application/json, text/event-stream"}
        h.update(headers)
        self.c.request("POST", self.path, json.dumps(body), h)
        r = self.c.getresponse()
        return r.status, r.getheader("Mcp-Session-Id"), r.read()


def legacy_calls(url, n):
    c = Conn(url)
    status, sid, body = c.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "relay", "version": "0"}}}, {})
    assert status == 200 and sid, (status, body)
    h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
    status, _, body = c.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
    assert status in (200, 202), (status, body)
    for i in range(1, n + 1):
        status, _, body = c.post({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                  "params": {"name": "echo", "arguments": {"text": "hi"}}}, h)
        assert status == 200 and b'"hi"' in body and f'"id":{i}'.encode() in body, (status, body)


def tasks_get(url, n):
    c = Conn(url)
    caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": caps}
    task = None
    for i in range(1, n + 1):
        if i % 1000 == 1:
            # A new task every 1,000 requests, each well within its
            # minute however slow valgrind runs (+0.1% of a create).
            status, _, body = c.post({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {
                "name": "sleep", "arguments": {"ms": 60000}, "_meta": meta}},
                {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "sleep"})
            task = re.search(rb'"taskId":"([^"]+)"', body)
            assert status == 200 and task, (status, body)
            task = task.group(1).decode()
        status, _, body = c.post({"jsonrpc": "2.0", "id": i, "method": "tasks/get",
                                  "params": {"taskId": task, "_meta": meta}},
                                 {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tasks/get",
                                  "Mcp-Name": task})
        assert status == 200 and b'"working"' in body and f'"id":{i}'.encode() in body, (status, body)


def client_run(server, drive, n):
    """(Ir, allocator calls) of `server` (a binary, or a command line)
    under callgrind while `drive` sends it n requests."""
    out = tempfile.mktemp(prefix="cg-", suffix=".out")
    command = server if isinstance(server, list) else [server]
    srv = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + command + [
                            "--addr", "127.0.0.1:0", "--max-sessions", "20000",
                            "--idle-timeout-ms", "3600000"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           env=dict(os.environ, RUST_LOG="warn"))
    url = srv.stdout.readline().strip().removeprefix("listening on ")
    try:
        drive(url, n)
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=120)
    for _ in range(50):
        if os.path.exists(out) and os.path.getsize(out) > 0:
            break
        time.sleep(0.1)
    result = callgrind.parse_profile(out)
    os.remove(out)
    return result


def measure(shape, server, e2e):
    """(Ir, allocations) per request of one shape: at n and 3n."""
    if shape == "modern":
        at, n, per = (lambda k: callgrind.server_run([server], e2e, k, True)), 6000, 1
    elif shape == "legacy session":
        at, n, per = (lambda k: callgrind.server_run([server], e2e, k, False)), 2000, 3
    elif shape == "legacy call":
        at, n, per = (lambda k: client_run(server, legacy_calls, k)), 6000, 1
    else:
        at, n, per = (lambda k: client_run(server, tasks_get, k)), 6000, 1
    ir1, a1 = at(n)
    ir3, a3 = at(3 * n)
    return (ir3 - ir1) / (2 * n) / per, (a3 - a1) / (2 * n) / per


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--e2e", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shapes", default="modern,legacy session,legacy call,tasks/get")
    o = ap.parse_args()
    os.environ.setdefault("TOKIO_WORKER_THREADS", "1")
    shapes = o.shapes.split(",")
    got = {}
    for r in range(o.runs):
        for shape in shapes:
            for who, server in [("before", o.before), ("after", o.after)]:
                ir, al = measure(shape, server, o.e2e)
                got.setdefault((shape, who), []).append((ir, al))
                print(f"run {r + 1} {shape} {who}: {ir:,.0f} Ir, {al:.2f} allocations",
                      file=sys.stderr, flush=True)
    print("| per request | Ir before | Ir after | after ÷ before | allocations before → after |")
    print("|---|---:|---:|---:|---:|")
    spread = 0.0
    for shape in shapes:
        b, a = got[(shape, "before")], got[(shape, "after")]
        ib, ia = (sum(x[0] for x in v) / len(v) for v in (b, a))
        ab, aa = (sum(x[1] for x in v) / len(v) for v in (b, a))
        for v in (b, a):
            irs = [x[0] for x in v]
            spread = max(spread, (max(irs) - min(irs)) / min(irs))
        print(f"| {LABELS[shape]} | {ib:,.0f} | {ia:,.0f} | {ia / ib:.3f} | {ab:.2f} → {aa:.2f} |")
    print(f"\nmean of {o.runs} runs; the runs' Ir agree within {spread * 100:.1f}%")


if __name__ == "__main__":
    main()
