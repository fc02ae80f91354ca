"""The Python MCP SDK 2.3 serving `subscriptions/listen`, the smallest server
that publishes a resource update on demand, for benches/listen to measure
beside examples/mcp_server (memory per idle listener, the time one
`notifications/resources/updated` takes to reach every listener).

    benches/run.sh peers      # a venv of tests/interop/requirements.txt in benches/peers/.venv
    benches/peers/.venv/bin/python benches/peers/python_listen_server.py --addr 127.0.0.1:0 \
        --max-listeners 10000

The SDK's lowlevel `Server`, as its docs build one, on uvicorn (one worker,
logging at warning, as python_mcp_server.py runs it):

* `subscriptions/listen` is served by the SDK's own `ListenHandler` over its
  `InMemorySubscriptionBus`. Its cap on open listen streams is 1,024 by
  default; the lowlevel server takes the handler as
  `on_subscriptions_listen=`, whose `max_subscriptions` is the SDK's public
  way to raise it: `--max-listeners` sets it (default: the SDK's 1,024).
  (`MCPServer` builds its handler itself, with the default cap.)
* one tool, `publish`: publishes `ResourceUpdated(uri)` on the bus (what
  `ctx.notify_resource_updated(uri)` of an `MCPServer` tool does), and
  answers once the bus has handed it to every listen stream.

First stdout line: `listening on http://ADDR/mcp`. Other flags are accepted
and ignored.
"""

import argparse
import socket

import mcp_types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated

PUBLISH = types.Tool(
    name="publish",
    description="Publishes notifications/resources/updated for `uri` to its listeners.",
    input_schema={
        "type": "object",
        "properties": {"uri": {"type": "string"}},
        "required": ["uri"],
    },
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", default="127.0.0.1:8080")
    parser.add_argument("--max-listeners", type=int, default=1024)
    args, _ignored = parser.parse_known_args()

    bus = InMemorySubscriptionBus()

    async def list_tools(ctx: ServerRequestContext, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[PUBLISH])

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != "publish":
            raise ValueError(f"unknown tool {params.name}")
        uri = str((params.arguments or {}).get("uri", ""))
        await bus.publish(ResourceUpdated(uri=uri))
        return types.CallToolResult(content=[types.TextContent(type="text", text="published")])

    server = Server(
        "python-listen-peer",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus, max_subscriptions=args.max_listeners),
    )

    host, port = args.addr.rsplit(":", 1)
    app = server.streamable_http_app(host=host)
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
    import asyncio

    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
