#!/usr/bin/env python3
"""Hostile clients against MCP servers, measured from outside the server
process: the figures of RELIABILITY.md.

    cargo build --release -p sessionreg --example mcp_server --example axum_server
    cargo build --release -p e2e-rmcp
    python3 -m venv target/py-mcp && target/py-mcp/bin/pip install mcp==2.3.0
    python3 benches/hostile.py                      # every scenario, every server
    python3 benches/hostile.py slowloris bodies     # some scenarios
    python3 benches/hostile.py --servers sessionreg,rmcp ids
    # another build of sessionreg's examples (its mcp_server, axum_server):
    python3 benches/hostile.py --servers sessionreg \
        --sessionreg-examples ../base/target/release/examples --label "sessionreg (before)" \
        notify-flood origin-any-bind slowloris-axum

Servers (each started fresh for each scenario, on 127.0.0.1:0 unless the
scenario binds elsewhere, with the same flags; each prints `listening on
http://ADDR/mcp` first):

* sessionreg: target/release/examples/mcp_server (default bounds), or
              its axum_server for the scenarios about that example
              (`slowloris-axum`); --sessionreg-examples DIR takes both
              from another build, and --label names its rows
* rmcp:       target/release/rmcp_server (the e2e-rmcp member: rmcp 3.11,
              LocalSessionManager, hyper-util's auto builder as its examples)
* python:     target/py-mcp/bin/python benches/peers/python_mcp_server.py
              (the Python SDK 2.3, MCPServer on uvicorn); $PYTHON_MCP names
              another interpreter

Everything is read from outside: resident and peak memory (VmRSS, VmHWM)
and open sockets (/proc/PID/fd) of the server process, statuses and closed
connections as a client sees them; calls still running, from each
server's `running` tool (a count of its `sleep` calls in progress, which a
call's guard keeps). Times are coarse (connections are
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


def server_commands(examples, example):
    """Each server's command; sessionreg's is `example` of the build whose
    examples are in the directory `examples`."""
    python = os.environ.get("PYTHON_MCP", os.path.join(ROOT, "target/py-mcp/bin/python"))
    return {
        "sessionreg": [os.path.join(examples, example)],
        "rmcp": [os.path.join(ROOT, "target/release/rmcp_server")],
        "python": [python, os.path.join(ROOT, "benches/peers/python_mcp_server.py")],
    }


class Server:
    """One server process, started for one scenario. `name` is which
    server it is (`sessionreg`, `rmcp`, `python`)."""

    def __init__(self, name, command, flags=(), addr="127.0.0.1:0"):
        self.name = name
        self.process = subprocess.Popen(
            command + ["--addr", addr, *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": "warn"},
        )
        line = self.process.stdout.readline().decode()
        if not line.startswith("listening on http://"):
            self.stop()
            raise RuntimeError(f"{name}: unexpected first line {line!r}")
        self.bound = line.split("http://", 1)[1].split("/", 1)[0]
        self.host, port = self.bound.rsplit(":", 1)
        self.port = int(port)
        if self.host == "0.0.0.0":
            # Bound to every address: reach it (and name it in `Host`) on
            # loopback.
            self.host = "127.0.0.1"
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
    """A sessionreg metric's value (None for the peers, which have none,
    and for a metric this build does not export)."""
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


async def ping_with(server, extra):
    """The status of a `POST ping` with the header lines `extra` (pairs of
    bytes, written as they are: repeated names stay repeated)."""
    ping = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % next(REQUEST_IDS)
    reader, writer = await connect(server)
    lines = head(server, "POST", [("content-type", "application/json"), ("accept", ACCEPT),
                                  ("connection", "close")], len(ping))[:-2]
    for name, value in extra:
        lines += name + b": " + value + b"\r\n"
    writer.write(lines + b"\r\n" + ping)
    try:
        status, _, _ = await asyncio.wait_for(read_response(reader), 30)
    except (asyncio.TimeoutError, ConnectionError, OSError, IndexError, ValueError):
        status = "closed"
    writer.close()
    return status


async def ids(server):
    """POSTs with bad session ids: the status each server answers."""
    session = await initialize(server)
    figures = {}
    for name, values in BAD_IDS:
        if values is None:
            values = [session.encode(), session.encode()]
        elif values == "different":
            values = [session.encode(), b"0" * len(session)]
        figures[name] = await ping_with(server, [(b"mcp-session-id", v) for v in values])
    figures["session still served"] = (await call(server, session, "echo", {"text": "x"}))[0] == 200
    return figures


async def dup_headers(server):
    """A `ping` on a live session with a header that may come once given
    twice: `MCP-Protocol-Version` (two supported versions), `Authorization`
    (no server here requires one), and the session id (as `ids` sends it:
    the same id twice)."""
    session = await initialize(server)
    sid = (b"mcp-session-id", session.encode())
    version = (b"mcp-protocol-version", PROTOCOL.encode())
    figures = {
        "two MCP-Protocol-Version": await ping_with(server, [
            sid, (b"mcp-protocol-version", b"2025-11-25"), (b"mcp-protocol-version", b"2025-06-18")]),
        "two Authorization": await ping_with(server, [
            sid, version, (b"authorization", b"Bearer a"), (b"authorization", b"Bearer b")]),
        "two MCP-Session-Id (the same)": await ping_with(server, [sid, sid]),
        "one of each (control)": await ping_with(server, [sid, version]),
    }
    figures["session still served"] = (await call(server, session, "echo", {"text": "x"}))[0] == 200
    return figures


def result_text(body):
    """The first text content of the JSON-RPC result in a response body
    (JSON, or SSE `data:` lines), or None (an error, or no result)."""
    chunks = [body] + [line[5:] for line in body.split(b"\n") if line.startswith(b"data:")]
    for chunk in chunks:
        try:
            message = json.loads(chunk)
        except ValueError:
            continue
        if isinstance(message, dict) and "result" in message:
            try:
                return message["result"]["content"][0]["text"]
            except (KeyError, IndexError, TypeError):
                return None
    return None


async def running_now(server):
    """How many `sleep` calls the server runs now (its `running` tool), as
    a new session asks it; None if it has no such tool or did not serve."""
    try:
        session = await initialize(server)
        if session is None:
            return None
        status, _, body = await call(server, session, "running", {}, timeout=30)
        await request(server, "DELETE", json_headers(session))
        text = result_text(body) if status == 200 else None
        return int(text) if text is not None and text.isdigit() else None
    except (asyncio.TimeoutError, ConnectionError, OSError, ValueError, IndexError):
        return None


async def deleted_calls(server, sessions=2, calls=10, ms=50_000, after=3.0):
    """`sessions` sessions each start `calls` concurrent `sleep` calls of
    `ms`; once they run, the clients hang up (close those connections), both
    sessions are DELETEd, and `after` seconds later: how many of those calls
    the server still runs (its `running` tool; sessionreg's handlers in
    flight too), and whether a new session is served."""
    owners = [await initialize(server) for _ in range(sessions)]
    calling = [asyncio.create_task(call(server, s, "sleep", {"ms": ms}, timeout=ms / 1000 + 60))
               for s in owners for _ in range(calls)]
    started = time.monotonic()
    running = None
    while time.monotonic() - started < 15:
        await asyncio.sleep(0.5)
        running = await running_now(server)
        if running is not None and running >= sessions * calls:
            break
    figures = {"calls running": running}
    in_flight = await metric(server, "sessionreg_http_handlers_in_flight")
    if in_flight is not None:
        figures["handlers in flight"] = in_flight
    for task in calling:
        task.cancel()  # `request` closes its connection on the way out
    await asyncio.gather(*calling, return_exceptions=True)
    await asyncio.sleep(1)
    figures["running 1 s after the hang-up"] = await running_now(server)
    deleted = [await request(server, "DELETE", json_headers(s)) for s in owners]
    figures["DELETE answers"] = tally(deleted)
    await asyncio.sleep(after)
    figures["running %g s after DELETE" % after] = await running_now(server)
    in_flight = await metric(server, "sessionreg_http_handlers_in_flight")
    if in_flight is not None:
        figures["handlers in flight then"] = in_flight
    figures["a new session served meanwhile"] = await served(server)
    return figures


async def notify_flood(server, n=300, notes=200, size=4096, reopen=False):
    """n sessions each receive `notes` notifications of `size` bytes on
    their standalone stream (the `notify` tool), without ever opening it; or
    (`reopen`) having opened and closed it once first. Calls go 10 at a
    time, so that what the server builds for the calls in progress (each
    builds `notes` x `size` bytes of frames) stays small beside what it
    keeps."""
    await asyncio.sleep(1)
    before = server.rss()
    sessions = [s for s in await batched([initialize(server) for _ in range(n)]) if s]
    figures = {"sessions": len(sessions)}
    if reopen:
        opened = await batched([open_stream(server, s) for s in sessions])
        for _, _, writer in opened:
            writer.close()
        figures["GET streams opened, then closed"] = tally([(status,) for status, _, _ in opened])
        await asyncio.sleep(1)
    await asyncio.sleep(1)
    opened_rss = server.rss()
    results = await batched([call(server, s, "notify", {"n": notes, "bytes": size}) for s in sessions],
                            width=10)
    await asyncio.sleep(2)
    after = server.rss()
    delivered = 0
    for status, _, body in results:
        text = result_text(body) if status == 200 else None
        if text and text.startswith("delivered "):
            delivered += int(text.split()[1])
    figures["notify answers"] = tally(results)
    figures["notifications a stream took"] = delivered
    figures["RSS per session"] = kib((after - before) / max(len(sessions), 1))
    figures["growth during the notify calls, per session"] = kib((after - opened_rss) / max(len(sessions), 1))
    figures["RSS before, then"] = f"{mib(before)}, {mib(after)}"
    log_bytes = await metric(server, "sessionreg_http_event_log_bytes")
    if log_bytes is not None:
        figures["event log bytes (metric)"] = kib(log_bytes)
    figures["served after"] = await served(server)
    return figures


async def origin_any_bind(server):
    """Bound to 0.0.0.0: an `initialize` with a foreign `Origin` (a DNS
    rebinding page), and with a loopback one: the status, and whether a
    session id came back."""
    figures = {"bound to": server.bound}
    for name, origin in [("foreign Origin", "http://rebind.attacker.example"),
                         ("loopback Origin", f"http://127.0.0.1:{server.port}")]:
        status, headers, _ = await request(server, "POST", json_headers() + [("origin", origin)],
                                           initialize_body())
        figures[name] = f"{status}, " + ("a session id" if "mcp-session-id" in headers else "no session id")
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


class Scenario:
    """A scenario: its run, the flags every server gets, the address they
    bind, the servers that have what it needs (`only`; None: all) with what
    the table says of the others (no row if empty), and which of
    sessionreg's examples serves it."""

    def __init__(self, run, flags=(), addr="127.0.0.1:0", only=None, others="", example="mcp_server"):
        self.run, self.flags, self.addr = run, list(flags), addr
        self.only, self.others, self.example = only, others, example


NO_STANDALONE_WRITER = "(not measured: no tool that writes to the standalone stream)"

SCENARIOS = {
    "slowloris": Scenario(slowloris),
    "slow-body": Scenario(slow_body),
    "streams": Scenario(streams),
    "non-reading": Scenario(non_reading),
    "long-calls": Scenario(long_calls),
    "flood": Scenario(flood, ["--max-sessions", "2000", "--idle-timeout-ms", "60000"]),
    "bodies-array": Scenario(lambda s: bodies_of(s, "array")),
    "bodies-params": Scenario(lambda s: bodies_of(s, "params")),
    "ids": Scenario(ids),
    "nesting": Scenario(nesting),
    "garbage": Scenario(garbage),
    "deleted-calls": Scenario(deleted_calls),
    "notify-flood": Scenario(notify_flood, ["--event-log", "256"], only={"sessionreg"},
                             others=NO_STANDALONE_WRITER),
    "notify-flood-reopened": Scenario(lambda s: notify_flood(s, reopen=True), ["--event-log", "256"],
                                      only={"sessionreg"}, others=NO_STANDALONE_WRITER),
    "origin-any-bind": Scenario(origin_any_bind, addr="0.0.0.0:0"),
    "origin-loopback-bind": Scenario(origin_any_bind),  # the same, bound to 127.0.0.1
    "dup-headers": Scenario(dup_headers),
    "slowloris-axum": Scenario(slowloris, only={"sessionreg"}, example="axum_server"),
}


def machine():
    load = open("/proc/loadavg").read().split()[:3]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return f"{cpu}, {os.cpu_count()} cores, load average {' '.join(load)}"


def option(args, flag, default):
    """The value of `flag VALUE` in `args` (removed from them), or `default`."""
    if flag not in args:
        return default
    i = args.index(flag)
    value = args[i + 1]
    del args[i:i + 2]
    return value


def main():
    args = sys.argv[1:]
    names = option(args, "--servers", ",".join(SERVERS_DEFAULT)).split(",")
    # Another build of sessionreg (its examples directory), and the name its
    # rows get ("sessionreg (before)").
    examples = option(args, "--sessionreg-examples", os.path.join(ROOT, "target/release/examples"))
    label = option(args, "--label", "sessionreg")
    scenarios = args or list(SCENARIOS)
    print(f"# hostile clients: {machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for scenario in scenarios:
        plan = SCENARIOS[scenario]
        commands = server_commands(examples, plan.example)
        print(f"\n## {scenario}\n")
        rows = []
        for name in names:
            shown = name
            if name == "sessionreg":
                shown = label if plan.example == "mcp_server" else f"{label}, {plan.example}"
            if plan.only is not None and name not in plan.only:
                if plan.others:
                    rows.append((shown, {"figures": plan.others}))
                continue
            server = Server(name, commands[name], plan.flags, plan.addr)
            try:
                figures = asyncio.run(plan.run(server))
            except Exception as error:  # a scenario a server could not go through
                figures = {"error": f"{type(error).__name__}: {error}"}
            figures["server alive at the end"] = server.alive()
            server.stop()
            rows.append((shown, figures))
            print(f"  {shown}: {figures}", file=sys.stderr, flush=True)
        keys = list(dict.fromkeys(k for _, f in rows for k in f))
        print("| server | " + " | ".join(keys) + " |")
        print("|---" * (len(keys) + 1) + "|")
        for name, figures in rows:
            print(f"| {name} | " + " | ".join(str(figures.get(k, "")) for k in keys) + " |")
        sys.stdout.flush()


SERVERS_DEFAULT = ["sessionreg", "rmcp", "python"]

if __name__ == "__main__":
    main()
