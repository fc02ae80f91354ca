"""The Python MCP SDK's streamable-HTTP server, with the flags and first
line of examples/mcp_server, for benches/hostile.py and benches/e2e to
measure beside it (the 2026-07-28 `tools/call` of `echo`, and the legacy
sessions).

    benches/run.sh peers      # a venv of tests/interop/requirements.txt in benches/peers/.venv
    benches/peers/.venv/bin/python benches/peers/python_mcp_server.py --addr 127.0.0.1:0

`--max-sessions` and `--idle-timeout-ms` map to the SDK's own knobs; the
other bound flags of examples/mcp_server are accepted and ignored (the SDK
and uvicorn have no counterpart, or keep their defaults). Tools: `echo`
(text), `sleep` (ms) and `running` (how many `sleep` calls run now), as
examples/mcp_server has. One uvicorn worker, logging at warning, on
uvloop and httptools when installed (`benches/peers/requirements.txt`: what
uvicorn recommends for production), as a production deployment of one
process would run; `--json-response` answers with one JSON body (the SDK's
`json_response=True`) instead of an SSE stream. The app is given the host
it is bound to, as the SDK's own `run(transport="streamable-http",
host=...)` gives it: the SDK turns its DNS-rebinding protection on for a
loopback host only.
"""

import argparse
import asyncio
import socket

import uvicorn
from mcp.server.mcpserver import MCPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", default="127.0.0.1:8080")
    parser.add_argument("--max-sessions", type=int, default=10_000)
    parser.add_argument("--idle-timeout-ms", type=int, default=1_800_000)
    # rmcp's peer runs with `--json-response` too: a request is answered with
    # one JSON body instead of an SSE stream (the SDK's default), with no
    # stream and no task group of its own per request.
    parser.add_argument("--json-response", action="store_true")
    args, _ignored = parser.parse_known_args()

    server = MCPServer("python-peer")

    @server.tool()
    async def echo(text: str) -> str:
        """Returns its text argument."""
        return text

    sleeping = 0

    @server.tool()
    async def sleep(ms: int) -> str:
        """Waits the given number of milliseconds, then answers."""
        nonlocal sleeping
        sleeping += 1
        try:
            await asyncio.sleep(ms / 1000)
        finally:  # also when the call is cancelled
            sleeping -= 1
        return f"slept {ms} ms"

    @server.tool()
    async def running() -> str:
        """How many `sleep` calls are running in this server right now."""
        return str(sleeping)

    host, port = args.addr.rsplit(":", 1)
    app = server.streamable_http_app(
        max_sessions=args.max_sessions,
        session_idle_timeout=args.idle_timeout_ms / 1000,
        host=host,
        json_response=args.json_response,
    )
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle's algorithm off
    # (TCP_NODELAY) only on accepted sockets whose proto says TCP, and
    # uvicorn serves the sockets it is given as they are. Left 0, every
    # answer on a kept-alive connection after the first waited about 40 ms
    # for the client's delayed ACK (92 requests per second at 5% of a core).
    # Set on the listener too: Linux's accepted sockets inherit it.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, int(port)))
    sock.listen(4096)
    print(f"listening on http://{host}:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", backlog=4096)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
