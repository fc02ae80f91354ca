#!/usr/bin/env python3
"""Latency of a keep-alive 2026-07-28 `tools/call` of `echo` (one POST, no
session), per request, against servers started afresh in alternating
rounds: p50, p90, p99, the mean, and the share over 10 ms (an answer that
waited out the client's delayed ACK), over every answer, each one checked.
Written for issue 30's question, what `TCP_NODELAY` does to an rmcp
server's SSE answers (BENCHMARKS.md, "TCP_NODELAY on the rmcp examples"):

    cargo build --release -p sessionreg-rmcp --example rmcp_server
    python3 benches/modern_latency.py \\
        --server after=target/release/examples/rmcp_server \\
        --server before=./rmcp_server-before [--connections 4] \\
        [--requests 2000] [--rounds 3]

Each `--server NAME=COMMAND` is started with `--addr 127.0.0.1:0` and read
for its `listening on http://ADDR/mcp` line. The client is curl (C, as wrk
would be; one process): `--parallel --parallel-max N` keeps N keep-alive
connections busy, and `-w` gives each transfer's total time.
"""

import argparse
import json
import shlex
import statistics
import subprocess
import time

BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"text": "ping"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "latency", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
).encode()
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


def start(command):
    server = subprocess.Popen(
        command + ["--addr", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = server.stdout.readline()
    if not line.startswith("listening on http://"):
        server.kill()
        raise SystemExit(f"{command[0]}: no address ({line!r})")
    host, port = line.split("//")[1].split("/")[0].rsplit(":", 1)
    return server, host, int(port)


def measure(command, connections, requests):
    server, host, port = start(command)
    url = f"http://{host}:{port}/mcp"
    curl = ["curl", "--no-progress-meter", "--parallel", "--parallel-max", str(connections)]
    curl += ["-w", "\\nT:%{http_code} %{time_total}\\n", "--data-binary", "@-"]
    for name, value in HEADERS.items():
        curl += ["-H", f"{name}: {value}"]
    try:
        # A warm-up call per connection, not counted.
        subprocess.run(curl + [url] * connections, input=BODY, capture_output=True, check=True)
        began = time.perf_counter()
        ran = subprocess.run(curl + [url] * requests, input=BODY, capture_output=True, check=True)
        elapsed = time.perf_counter() - began
    finally:
        server.terminate()
        server.wait()
    out = ran.stdout.decode()
    answers = out.count('"text":"ping"')
    times = []
    for line in out.splitlines():
        if line.startswith("T:"):
            status, took = line[2:].split()
            if status != "200":
                raise SystemExit(f"{command[0]}: status {status}")
            times.append(float(took))
    if len(times) != requests or answers != requests:
        raise SystemExit(f"{command[0]}: {answers} answers, {len(times)} transfers of {requests}")
    times.sort()
    at = lambda q: times[min(len(times) - 1, int(len(times) * q))] * 1e3
    return {
        "p50": statistics.median(times) * 1e3,
        "p90": at(0.90),
        "p99": at(0.99),
        "mean": statistics.mean(times) * 1e3,
        # The share of answers that waited out a delayed ACK (40 ms on Linux).
        "slow": 100 * sum(t > 0.010 for t in times) / len(times),
        "rps": len(times) / elapsed,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", action="append", required=True, metavar="NAME=COMMAND")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    servers = [(s.split("=", 1)[0], shlex.split(s.split("=", 1)[1])) for s in args.server]
    print(f"{args.requests} keep-alive 2026-07-28 tools/call per round on {args.connections} connections")
    columns = ["p50", "p90", "p99", "mean"]
    print("| round | server | p50 (ms) | p90 (ms) | p99 (ms) | mean (ms) | over 10 ms | requests/s |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    results = {name: [] for name, _ in servers}
    for r in range(1, args.rounds + 1):
        order = servers if r % 2 else list(reversed(servers))
        for name, command in order:
            m = measure(command, args.connections, args.requests)
            results[name].append(m)
            cells = " | ".join(f"{m[c]:.2f}" for c in columns)
            print(f"| {r} | {name} | {cells} | {m['slow']:.0f}% | {m['rps']:,.0f} |", flush=True)
    print()
    print("medians of the rounds:")
    print("| server | p50 (ms) | p90 (ms) | p99 (ms) | mean (ms) | over 10 ms | requests/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, _ in servers:
        ms = results[name]
        med = lambda k: statistics.median(m[k] for m in ms)
        cells = " | ".join(f"{med(c):.2f}" for c in columns)
        print(f"| {name} | {cells} | {med('slow'):.0f}% | {med('rps'):,.0f} |")


if __name__ == "__main__":
    main()
