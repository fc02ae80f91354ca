#!/usr/bin/env python3
"""Hostile clients against MCP servers, measured from outside the server
process: the figures of RELIABILITY.md.

    cargo build --release --example mcp_server -p sessionreg
    cargo build --release -p e2e-rmcp
    python3 -m venv target/py-mcp && target/py-mcp/bin/pip install mcp==2.3.0
    python3 benches/hostile.py                      # every scenario, every server
    python3 benches/hostile.py slowloris bodies     # some scenarios
    python3 benches/hostile.py --servers sessionreg,rmcp ids

Servers (each started fresh for each scenario, on 127.0.0.1:0, with the
same flags; each prints `listening on http://ADDR/mcp` first):

* sessionreg: target/release/examples/mcp_server (default bounds)
* rmcp:       target/release/rmcp_server (the e2e-rmcp member: rmcp 3.11,
              LocalSessionManager, hyper-util's auto builder as its examples)
* python:     target/py-mcp/bin/python benches/peers/python_mcp_server.py
              (the Python SDK 2.3, MCPServer on uvicorn); $PYTHON_MCP names
              another interpreter

Everything is read from outside: resident and peak memory (VmRSS, VmHWM)
and open sockets (/proc/PID/fd) of the server process, statuses and closed
connections as a client sees them. Times are coarse (connections are
polled every 0.5 s) and are given as what they are on a shared machine:
the figures that matter are counts and bytes.
"""

import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTOCOL = "2025-11-25"
ACCEPT = "application/json, text/event-stream"


def server_commands():
    python = os.environ.get("PYTHON_MCP", os.path.join(ROOT, "target/py-mcp/bin/python"))
    return {
        "sessionreg": [os.path.join(ROOT, "target/release/examples/mcp_server")],
        "rmcp": [os.path.join(ROOT, "target/release/rmcp_server")],
        "python": [python, os.path.join(ROOT, "benches/peers/python_mcp_server.py")],
    }


class Server:
    """One server process, started for one scenario."""

    def __init__(self, name, command, flags=()):
        self.name = name
        self.process = subprocess.Popen(
            command + ["--addr", "127.0.0.1:0", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": "warn"},
        )
        line = self.process.stdout.readline().decode()
        if not line.startswith("listening on http://"):
            self.stop()
            raise RuntimeError(f"{name}: unexpected first line {line!r}")
        address = line.split("http://", 1)[1].split("/", 1)[0]
        self.host, port = address.rsplit(":", 1)
        self.port = int(port)
        self.pid = self.process.pid
        # Sockets a server holds before any client (the listener; the Rust
        # servers' signal-handling socket pairs): not connections.
        self.idle_sockets = self.open_sockets()

    def status(self, field):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def rss(self):
        return self.status("VmRSS")

    def peak(self):
        return self.status("VmHWM")

    def open_sockets(self):
        count = 0
        for fd in os.listdir(f"/proc/{self.pid}/fd"):
            try:
                if os.readlink(f"/proc/{self.pid}/fd/{fd}").startswith("socket:"):
                    count += 1
            except OSError:
                pass
        return count

    def sockets(self):
        """Connections the server holds open: its sockets, less those it
        had before any client came."""
        return max(self.open_sockets() - self.idle_sockets, 0)

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# --- a small HTTP/1.1 client, the same for every server ---------------------


async def connect(server, rcvbuf=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (server.host, server.port))
    return await asyncio.open_connection(sock=sock, limit=16 * 1024 * 1024)


def head(server, method, headers=(), length=None, path="/mcp"):
    lines = [f"{method} {path} HTTP/1.1", f"host: {server.host}:{server.port}"]
    lines += [f"{k}: {v}" for k, v in headers]
    if length is not None:
        lines.append(f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def read_response(reader):
    """Status, headers and body of one response. An SSE body is read up to
    its first JSON-RPC response (servers keep some streams open after)."""
    status_line = await reader.readline()
    if not status_line:
        return None, {}, b""
    status = int(status_line.split()[1])
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        key, _, value = line.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip()
    sse = headers.get("content-type", "").startswith("text/event-stream")
    body = b""
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                await reader.readline()
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
            if sse and b'"id"' in body and (b'"result"' in body or b'"error"' in body):
                break
    return status, headers, body


async def request(server, method, headers=(), body=b"", timeout=60, path="/mcp"):
    """One request on a connection of its own."""
    reader, writer = await connect(server)

    async def upload():
        writer.write(head(server, method, [*headers, ("connection", "close")], len(body), path) + body)
        try:
            await writer.drain()
        except (ConnectionError, OSError):
            pass  # answered (and closed) before the body was all read

    # Read while uploading: a server may answer before it has read it all.
    uploading = asyncio.create_task(upload())
    try:
        return await asyncio.wait_for(read_response(reader), timeout)
    finally:
        uploading.cancel()
        writer.close()


def json_headers(session=None):
    headers = [("content-type", "application/json"), ("accept", ACCEPT)]
    if session:
        headers += [("mcp-session-id", session), ("mcp-protocol-version", PROTOCOL)]
    return headers


def initialize_body(name="hostile"):
    return json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                   "clientInfo": {"name": name, "version": "1"}},
    }).encode()


async def initialize(server):
    status, headers, _ = await request(server, "POST", json_headers(), initialize_body())
    if status != 200:
        return None
    session = headers.get("mcp-session-id")
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    await request(server, "POST", json_headers(session), note)
    return session


REQUEST_IDS = iter(range(2, 1 << 62))


async def call(server, session, tool, arguments, timeout=120):
    # Ids unique in the session: servers that route answers by id (rmcp,
    # the Python SDK) answer only one of several requests with the same id.
    body = json.dumps({"jsonrpc": "2.0", "id": next(REQUEST_IDS), "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}}).encode()
    return await request(server, "POST", json_headers(session), body, timeout)


async def open_stream(server, session, rcvbuf=None):
    reader, writer = await connect(server, rcvbuf)
    writer.write(head(server, "GET", [("accept", "text/event-stream"),
                                      ("mcp-session-id", session),
                                      ("mcp-protocol-version", PROTOCOL)]))
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    if rcvbuf:
        # Really stop reading: asyncio would otherwise keep reading the
        # socket into its own buffer.
        writer.transport.pause_reading()
    return status, reader, writer


async def until_closed(reader, started, cap):
    """When the server closed this connection (seconds after `started`), or
    None if it was open after `cap` seconds."""
    try:
        while True:
            left = cap - (time.monotonic() - started)
            if left <= 0:
                return None
            data = await asyncio.wait_for(reader.read(65536), left)
            if not data:
                return time.monotonic() - started
    except asyncio.TimeoutError:
        return None
    except (ConnectionError, OSError):
        return time.monotonic() - started


async def served(server):
    """Whether a well-behaved client is served now: initialize, call, DELETE."""
    try:
        session = await initialize(server)
        if session is None:
            return False
        status, _, _ = await call(server, session, "echo", {"text": "hi"}, timeout=30)
        await request(server, "DELETE", json_headers(session))
        return status == 200
    except (asyncio.TimeoutError, ConnectionError, OSError, ValueError, IndexError):
        return False


async def metric(server, name):
    if server.name != "sessionreg":
        return None
    _, _, body = await request(server, "GET", path="/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    return None


def tally(results):
    """`status: count, ...` of request results (an exception counts by its
    type: the connection failed)."""
    counts = {}
    for r in results:
        key = r[0] if isinstance(r, tuple) else type(r).__name__
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=str))


def mib(n):
    return f"{n / 1048576:.1f} MiB"


def kib(n):
    return f"{n / 1024:.1f} KiB"


def shed_summary(times, n):
    closed = [t for t in times if t is not None]
    held = n - len(closed)
    if not closed:
        return held, "never (within the cap)"
    return held, f"median {statistics.median(closed):.1f} s, max {max(closed):.1f} s"


async def shed(server, conns, waits, cap):
    """While hostile connections `conns` wait for the server to close them
    (`waits`), a well-behaved client is served; then: how many the server
    still held after `cap` seconds, its connections then, how long it took
    to shed one, and whether the client was served."""
    ok = await served(server)
    times = await asyncio.gather(*waits)
    sockets = server.sockets()
    for _, w in conns:
        w.close()
    held, took = shed_summary(times, len(conns))
    return {"held after %ds" % cap: f"{held} of {len(conns)}", "connections held then": sockets,
            "time to shed": took, "served meanwhile": ok}


# --- scenarios ----------------------------------------------------------------


async def slowloris(server, n=500, cap=60.0):
    """n connections each send half a request header, then nothing."""
    conns = []
    for _ in range(n):
        reader, writer = await connect(server)
        writer.write(b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-ty")
        conns.append((reader, writer))
    started = time.monotonic()
    return await shed(server, conns, [until_closed(r, started, cap) for r, _ in conns], cap)


async def slow_body(server, n=200, cap=60.0):
    """n requests send their headers and 10 bytes of a 1000-byte body, then
    a byte every 2 s."""
    conns = []
    for _ in range(n):
        reader, writer = await connect(server)
        writer.write(head(server, "POST", json_headers(), 1000) + b'{"jsonrpc"')
        conns.append((reader, writer))
    started = time.monotonic()
    statuses = {}

    async def trickle_and_wait(reader, writer):
        async def trickle():
            while True:
                await asyncio.sleep(2)
                writer.write(b" ")
                await writer.drain()

        dripping = asyncio.create_task(trickle())
        try:
            line = await asyncio.wait_for(reader.readline(), cap)
            status = line.split()[1].decode() if line else "closed"
        except asyncio.TimeoutError:
            status = None
        except (ConnectionError, OSError, IndexError):
            status = "closed"
        statuses[status] = statuses.get(status, 0) + 1
        when = await until_closed(reader, started, cap) if status not in (None, "closed") else (
            None if status is None else time.monotonic() - started)
        dripping.cancel()
        return when

    figures = await shed(server, conns, [trickle_and_wait(r, w) for r, w in conns], cap)
    figures["answers"] = ", ".join(f"{k or 'none'}: {v}" for k, v in sorted(statuses.items(), key=str))
    return figures


async def batched(coroutines, width=100):
    results = []
    for i in range(0, len(coroutines), width):
        results += await asyncio.gather(*coroutines[i:i + width])
    return results


async def streams(server, n=5000):
    """n sessions, each holding its standalone GET stream."""
    await asyncio.sleep(1)
    before = server.rss()
    sessions = [s for s in await batched([initialize(server) for _ in range(n)]) if s]
    opened = await batched([open_stream(server, s) for s in sessions])
    held = [(r, w) for status, r, w in opened if status == 200]
    await asyncio.sleep(2)
    after = server.rss()
    latencies = []
    for _ in range(20):
        t = time.monotonic()
        ok = await served(server)
        latencies.append((time.monotonic() - t) * 1000 if ok else float("inf"))
    sockets = server.sockets()
    for _, w in held:
        w.close()
    return {"sessions": len(sessions), "streams open": len(held),
            "connections held": sockets,
            "RSS per session with a stream": kib((after - before) / max(len(held), 1)),
            "a new client's session (initialize, call, DELETE)":
                f"median {statistics.median(latencies):.1f} ms"}


async def non_reading(server, n=50, hold=150.0):
    """n sessions open their GET stream with a 4 KiB receive buffer and never
    read it. sessionreg is also made to push, every second all along (its
    `notify` tool: 64 messages of 16 KiB per session a round), so its
    streams fill the socket buffers (up to tcp_wmem's 4 MiB here) and then
    stall; the peers have no tool that writes to the standalone stream, and
    hold only keep-alives."""
    sessions = [s for s in await batched([initialize(server) for _ in range(n)]) if s]
    opened = await batched([open_stream(server, s, rcvbuf=4096) for s in sessions])
    held = [(r, w) for status, r, w in opened if status == 200]
    started = time.monotonic()
    if server.name == "sessionreg":
        while time.monotonic() - started < hold:
            await batched([call(server, s, "notify", {"n": 64, "bytes": 16384}) for s in sessions])
            await asyncio.sleep(1)
    await asyncio.sleep(max(hold - (time.monotonic() - started), 0))
    figures = {"streams opened": len(held),
               "connections held after %ds" % hold: server.sockets(),
               "RSS then": mib(server.rss())}
    open_streams = await metric(server, "sessionreg_http_streams_open")
    if open_streams is not None:
        figures["streams still open"] = open_streams
        figures["notifications dropped (counted)"] = await metric(
            server, "sessionreg_http_notifications_dropped_total")
    figures["served meanwhile"] = await served(server)
    for _, w in held:
        w.close()
    return figures


async def long_calls(server, n=300, ms=10000):
    """n concurrent 10 s tool calls on one session."""
    session = await initialize(server)
    before = server.rss()
    results = await asyncio.gather(*[call(server, session, "sleep", {"ms": ms}, timeout=ms / 1000 + 60)
                                     for _ in range(n)], return_exceptions=True)
    after_ok = await served(server)
    return {"answers": tally(results),
            "peak RSS over start": mib(server.peak() - before),
            "served after": after_ok}


async def flood(server, n=2500, idle_s=60):
    """n initialize requests, never DELETEd, at --max-sessions 2000 and
    --idle-timeout-ms 60000 (longer than the flood takes); then the idle
    timeout passes."""
    started = time.monotonic()
    await asyncio.sleep(1)
    before = server.rss()
    statuses = {}
    results = await batched([request(server, "POST", json_headers(), initialize_body("flood"))
                             for _ in range(n)], width=50)
    for status, headers, _ in results:
        key = f"{status}" + (" +Retry-After" if "retry-after" in headers else "")
        statuses[key] = statuses.get(key, 0) + 1
    full = server.rss()
    created = statuses.get("200", 0)
    took = time.monotonic() - started
    await asyncio.sleep(max(idle_s + 5 - took, 0))
    figures = {"answers": ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())),
               "flood took": f"{took:.0f} s",
               "RSS per session": kib((full - before) / max(created, 1)),
               "RSS full, then %ds after the start" % (idle_s + 5): f"{mib(full)}, {mib(server.rss())}"}
    live = await metric(server, "sessionreg_sessions_live")
    if live is not None:
        figures["live sessions then"] = live
    figures["served after"] = await served(server)
    return figures


async def bodies_of(server, kind, n=32, size=4 * 1024 * 1024):
    """n concurrent 4 MiB bodies on one session: `[0,0,...]` (a batch), or
    a `ping` with 4 MiB of params."""
    session = await initialize(server)
    await asyncio.sleep(1)
    before = server.rss()
    def body(i):
        if kind == "array":
            return ("[" + "0," * ((size - 3) // 2) + "0]").encode()
        # Ids unique in the session (see `call`), all of the same length.
        prefix = '{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"pad":"' % (1000 + i)
        return (prefix + "x" * (size - len(prefix) - 3) + '"}}').encode()

    results = await asyncio.gather(*[request(server, "POST", json_headers(session), body(i), timeout=120)
                                     for i in range(n)], return_exceptions=True)
    return {"answers": tally(results),
            "peak RSS over start": mib(server.peak() - before),
            "served after": await served(server)}


BAD_IDS = [
    ("malformed", [b"zz"]),
    ("oversized (40 KB)", [b"a" * 40000]),
    ("non-ASCII", ["é".encode() * 16]),
    ("two, the same", None),
    ("two, different", "different"),
]


async def ids(server):
    """POSTs with bad session ids: the status each server answers."""
    session = await initialize(server)
    figures = {}
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    for name, values in BAD_IDS:
        if values is None:
            values = [session.encode(), session.encode()]
        elif values == "different":
            values = [session.encode(), b"0" * len(session)]
        reader, writer = await connect(server)
        lines = head(server, "POST", [("content-type", "application/json"), ("accept", ACCEPT),
                                      ("connection", "close")], len(ping))[:-2]
        for value in values:
            lines += b"mcp-session-id: " + value + b"\r\n"
        writer.write(lines + b"\r\n" + ping)
        try:
            status, _, _ = await asyncio.wait_for(read_response(reader), 30)
        except (asyncio.TimeoutError, ConnectionError, OSError, IndexError, ValueError):
            status = "closed"
        writer.close()
        figures[name] = status
    figures["session still served"] = (await call(server, session, "echo", {"text": "x"}))[0] == 200
    return figures


async def nesting(server, depth=100_000):
    """Deep nesting: in a tool call's params, and as the whole body."""
    session = await initialize(server)
    deep = "[" * depth + "]" * depth
    call_body = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":'
                 + deep + '}}}').encode()
    figures = {}
    for name, body in [("in params", call_body), ("the whole body", deep.encode())]:
        try:
            status, _, _ = await request(server, "POST", json_headers(session), body, timeout=60)
        except (asyncio.TimeoutError, ConnectionError, OSError, IndexError, ValueError):
            status = "closed"
        figures[name] = status
    figures["alive, serving"] = server.alive() and await served(server)
    return figures


async def garbage(server, n=60, wait=30.0):
    """n connections send random bytes (some after an HTTP/2 preface)."""
    rng = random.Random(7)
    conns = []
    for i in range(n):
        reader, writer = await connect(server)
        payload = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 5000)))
        if i % 4 == 0:
            payload = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + payload
        writer.write(payload)
        conns.append((reader, writer))
    started = time.monotonic()
    times = await asyncio.gather(*[until_closed(r, started, wait) for r, _ in conns])
    for _, w in conns:
        w.close()
    held, _ = shed_summary(times, n)
    return {"held after %ds" % wait: f"{held} of {n}", "alive, serving": server.alive() and await served(server)}


SCENARIOS = {
    "slowloris": (slowloris, []),
    "slow-body": (slow_body, []),
    "streams": (streams, []),
    "non-reading": (non_reading, []),
    "long-calls": (long_calls, []),
    "flood": (flood, ["--max-sessions", "2000", "--idle-timeout-ms", "60000"]),
    "bodies-array": (lambda s: bodies_of(s, "array"), []),
    "bodies-params": (lambda s: bodies_of(s, "params"), []),
    "ids": (ids, []),
    "nesting": (nesting, []),
    "garbage": (garbage, []),
}


def machine():
    load = open("/proc/loadavg").read().split()[:3]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return f"{cpu}, {os.cpu_count()} cores, load average {' '.join(load)}"


def main():
    args = sys.argv[1:]
    names = list(SERVERS_DEFAULT)
    if "--servers" in args:
        i = args.index("--servers")
        names = args[i + 1].split(",")
        del args[i:i + 2]
    scenarios = args or list(SCENARIOS)
    commands = server_commands()
    print(f"# hostile clients: {machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for scenario in scenarios:
        run, flags = SCENARIOS[scenario]
        print(f"\n## {scenario}\n")
        rows = []
        for name in names:
            server = Server(name, commands[name], flags)
            try:
                figures = asyncio.run(run(server))
            except Exception as error:  # a scenario a server could not go through
                figures = {"error": f"{type(error).__name__}: {error}"}
            figures["server alive at the end"] = server.alive()
            server.stop()
            rows.append((name, figures))
            print(f"  {name}: {figures}", file=sys.stderr, flush=True)
        keys = list(dict.fromkeys(k for _, f in rows for k in f))
        print("| server | " + " | ".join(keys) + " |")
        print("|---" * (len(keys) + 1) + "|")
        for name, figures in rows:
            print(f"| {name} | " + " | ".join(str(figures.get(k, "")) for k in keys) + " |")
        sys.stdout.flush()


SERVERS_DEFAULT = ["sessionreg", "rmcp", "python"]

if __name__ == "__main__":
    main()
