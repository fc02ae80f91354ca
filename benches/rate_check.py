#!/usr/bin/env python3
"""What a rate-limit check costs per request: examples/mcp_server answering
2026-07-28 `tools/call`s of `echo` from one authenticated principal (one
keep-alive connection), with no limit, with `--rate-limit` on the node
alone, and with `--rate-limit` on a fleet's bus (`--redis-url`: each
decision one script in a local `redis-server`). The limit is never reached
(1,000,000 a second): only the check is measured.

Per configuration:
* the server's instructions (callgrind Ir, user space) and heap
  allocations per request, as (X(3n) - X(n)) / 2n over one server process
  under callgrind (benches/relay_callgrind.py's `client_run`), one tokio
  worker (TOKIO_WORKER_THREADS=1), so the start and shutdown cancel out;
* without valgrind, the client's median round trip per request and, with
  Redis, redis-server's CPU (user + system, /proc) per request, and of it
  the script's own time (Redis's `INFO commandstats`, EVALSHA
  usec_per_call; the rest is Redis's network I/O per request).

usage: rate_check.py --server target/release/examples/mcp_server [--n N] [--runs R]
(benches/run.sh builds the server with --features redis)
"""
import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in benches/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import relay_callgrind  # noqa: E402  (benches/relay_callgrind.py)

MODERN = "2026-07-28"
TOKEN = "rate-bench-token"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis(tmp):
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", tmp],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, f"redis://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    sys.exit("rate_check.py: redis-server did not start")


def calls(url, n, times=None):
    host, path = url.removeprefix("http://").split("/", 1)
    h, p = host.rsplit(":", 1)
    c = http.client.HTTPConnection(h, int(p))
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {TOKEN}", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
    for i in range(1, n + 1):
        body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"text": "hi"}, "_meta": meta}})
        start = time.perf_counter()
        c.request("POST", "/" + path, body, headers)
        r = c.getresponse()
        data = r.read()
        if times is not None:
            times.append(time.perf_counter() - start)
        assert r.status == 200 and b'"hi"' in data, (r.status, data)


def start(cmd):
    """The server `cmd` on a free port, and its URL."""
    srv = subprocess.Popen(cmd + ["--addr", "127.0.0.1:0", "--idle-timeout-ms", "3600000"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           env=dict(os.environ, RUST_LOG="warn"))
    line = srv.stdout.readline()
    url = line.strip().removeprefix("listening on ")
    if not url.startswith("http://"):
        srv.kill()
        sys.exit(f"rate_check.py: {cmd[0]} printed {line!r}")
    return srv, url


def stop(srv):
    srv.send_signal(signal.SIGTERM)
    try:
        srv.wait(timeout=120)
    except subprocess.TimeoutExpired:
        srv.kill()
        srv.wait()


def bus_up(url):
    host = url.removeprefix("http://").split("/", 1)[0]
    for _ in range(600):
        c = http.client.HTTPConnection(*host.rsplit(":", 1))
        c.request("GET", "/metrics")
        if "\nsessionreg_bus_up 1" in c.getresponse().read().decode():
            return
        time.sleep(0.05)
    sys.exit("rate_check.py: the bus never came up")


def profile(cmd, n, on_bus):
    """(Ir, allocator calls) of the server `cmd` under callgrind, n calls."""
    def drive(url, n):
        if on_bus:
            bus_up(url)
        calls(url, n)
    return relay_callgrind.client_run(cmd, drive, n)


def redis_says(url, command):
    """One inline command to the Redis at `url`: its reply, as text."""
    host, port = url.removeprefix("redis://").rsplit(":", 1)
    with socket.create_connection((host, int(port))) as s:
        s.sendall(command.encode() + b"\r\n")
        data = b""
        while b"\r\n" not in data:
            data += s.recv(65536)
        head, _, rest = data.partition(b"\r\n")
        if not head.startswith(b"$"):
            return head.decode()
        size = int(head[1:])
        while len(rest) < size + 2:
            rest += s.recv(65536)
        return rest[:size].decode()


def script_usec(url):
    """Redis's own time per EVALSHA since the last RESETSTAT (µs)."""
    stats = redis_says(url, "INFO commandstats")
    for line in stats.splitlines():
        if line.startswith("cmdstat_evalsha:"):
            return float(line.split("usec_per_call=")[1].split(",")[0])
    return None


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=2)
    o = ap.parse_args()
    os.environ.setdefault("TOKIO_WORKER_THREADS", "1")
    tmp = tempfile.mkdtemp(prefix="rate-check-")
    keys = os.path.join(tmp, "bus.keys")
    with open(keys, "w") as f:
        f.write("1=" + os.urandom(32).hex() + "\n")
    rds, rurl = redis(tmp)
    base = [o.server, "--bearer-token", f"ada={TOKEN}"]
    limit = ["--rate-limit", "1000000/s"]
    configs = [
        ("no limit", base, False),
        ("`--rate-limit`, one node", base + limit, False),
        ("`--rate-limit`, on the fleet's bus (Redis decides)", base + limit
         + ["--redis-url", rurl, "--bus-key-file", keys], True),
    ]
    rows = {}
    try:
        for r in range(o.runs):
            for name, cmd, on_bus in configs:
                ir1, a1 = profile(cmd, o.n, on_bus)
                ir3, a3 = profile(cmd, 3 * o.n, on_bus)
                ir, al = (ir3 - ir1) / (2 * o.n), (a3 - a1) / (2 * o.n)
                rows.setdefault(name, {"ir": [], "al": [], "rtt": [], "redis": []})
                rows[name]["ir"].append(ir)
                rows[name]["al"].append(al)
                srv, url = start(cmd)
                try:
                    if on_bus:
                        bus_up(url)
                    calls(url, 500)
                    redis_says(rurl, "CONFIG RESETSTAT")
                    before = cpu_ticks(rds.pid)
                    times = []
                    calls(url, o.n * 3, times)
                    used = (cpu_ticks(rds.pid) - before) / os.sysconf("SC_CLK_TCK")
                finally:
                    stop(srv)
                rows[name]["rtt"].append(statistics.median(times))
                rows[name]["redis"].append(used / (o.n * 3) if on_bus else None)
                rows[name].setdefault("script", []).append(script_usec(rurl) if on_bus else None)
                print(f"run {r + 1} {name}: {ir:,.0f} Ir, {al:.2f} allocations, "
                      f"{statistics.median(times) * 1e6:.0f} µs median", file=sys.stderr, flush=True)
    finally:
        rds.kill()
        rds.wait()
    base_ir = statistics.mean(rows["no limit"]["ir"])
    base_rtt = statistics.mean(rows["no limit"]["rtt"])
    print("| per 2026-07-28 `tools/call` | server Ir | ÷ no limit | allocations | median round trip | ÷ no limit | redis-server CPU | of it, the script |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, _, _ in configs:
        v = rows[name]
        ir, al, rtt = statistics.mean(v["ir"]), statistics.mean(v["al"]), statistics.mean(v["rtt"])
        red = v["redis"][0]
        red = f"{statistics.mean(v['redis']) * 1e6:.1f} µs" if red is not None else "—"
        scr = [x for x in v["script"] if x is not None]
        scr = f"{statistics.mean(scr):.1f} µs" if scr else "—"
        print(f"| {name} | {ir:,.0f} | {ir / base_ir:.3f} | {al:.2f} | {rtt * 1e6:.0f} µs | "
              f"{rtt / base_rtt:.2f} | {red} | {scr} |")
    print(f"\nmean of {o.runs} runs, {o.n} and {3 * o.n} requests per profile; one tokio worker")


if __name__ == "__main__":
    main()
