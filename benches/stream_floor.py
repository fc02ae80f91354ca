#!/usr/bin/env python3
"""Memory per session holding an open GET stream, against its floor: the
same number of SSE streams held by hyper alone (e2e-rmcp's `stream_floor`,
served as sessionreg's `serve` serves connections, with no MCP and no
sessions). The difference is what the session layer itself holds per
session with a stream; the rest is hyper's connection (its read buffer and
header buffer), tokio's task, and the allocator.

    cargo build --release --example mcp_server -p sessionreg
    cargo build --release -p e2e-rmcp --bin stream_floor
    python3 benches/stream_floor.py [--streams 5000] [--rounds 3]

Each round starts both servers afresh, one after the other (alternating
which goes first), and reads VmRSS from /proc/PID/status before and two
seconds after the streams are open; sessionreg's figure is split into the
sessions (initialized, no stream yet) and the streams added to them. The
client is hostile.py's, unchanged.
"""

import argparse
import asyncio
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile  # noqa: E402

FLOOR = os.path.join(hostile.ROOT, "target/release/stream_floor")


async def hold(server, sessions):
    opened = await hostile.batched([hostile.open_stream(server, s) for s in sessions])
    held = [(r, w) for status, r, w in opened if status == 200]
    await asyncio.sleep(2)
    return held


def release(held):
    for _, writer in held:
        writer.close()


async def floor(n):
    server = hostile.Server("hyper alone", [FLOOR])
    try:
        await asyncio.sleep(1)
        before = server.rss()
        held = await hold(server, ["none"] * n)
        after = server.rss()
        release(held)
        return {"streams": len(held), "per stream": (after - before) / max(len(held), 1)}
    finally:
        server.stop()


async def sessionreg(n):
    server = hostile.Server("sessionreg", hostile.server_commands()["sessionreg"],
                            ["--max-sessions", str(2 * n)])
    try:
        await asyncio.sleep(1)
        before = server.rss()
        sessions = [s for s in await hostile.batched(
            [hostile.initialize(server) for _ in range(n)]) if s]
        await asyncio.sleep(1)
        initialized = server.rss()
        held = await hold(server, sessions)
        after = server.rss()
        release(held)
        count = max(len(held), 1)
        return {"streams": len(held),
                "per stream": (after - before) / count,
                "session alone": (initialized - before) / max(len(sessions), 1),
                "stream added": (after - initialized) / count}
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for binary in (FLOOR, hostile.server_commands()["sessionreg"][0]):
        if not os.path.exists(binary):
            sys.exit(f"{binary} is missing: build it first (see the header of this script)")

    rows = []
    for i in range(args.rounds):
        order = [floor, sessionreg] if i % 2 == 0 else [sessionreg, floor]
        result = {}
        for run in order:
            result[run.__name__] = asyncio.run(run(args.streams))
        rows.append(result)

    kib = lambda b: f"{b / 1024:.1f} KiB"  # noqa: E731
    print(f"{args.streams} streams per server, {args.rounds} rounds\n")
    print("| round | hyper alone: streams, RSS per stream | sessionreg: streams, RSS per "
          "session with a stream | of which the session | of which the stream | "
          "sessionreg − hyper alone |")
    print("|---:|---:|---:|---:|---:|---:|")
    for i, r in enumerate(rows, 1):
        f, s = r["floor"], r["sessionreg"]
        print(f"| {i} | {f['streams']}, {kib(f['per stream'])} | {s['streams']}, "
              f"{kib(s['per stream'])} | {kib(s['session alone'])} | "
              f"{kib(s['stream added'])} | {kib(s['per stream'] - f['per stream'])} |")
    med = lambda key, field: statistics.median(r[key][field] for r in rows)  # noqa: E731
    print(f"| median | {kib(med('floor', 'per stream'))} | {kib(med('sessionreg', 'per stream'))} "
          f"| {kib(med('sessionreg', 'session alone'))} | {kib(med('sessionreg', 'stream added'))} "
          f"| {kib(med('sessionreg', 'per stream') - med('floor', 'per stream'))} |")


if __name__ == "__main__":
    main()
