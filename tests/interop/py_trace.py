"""One trace across the official Python SDK's client and mcp_server: the
client (mcp 2.3, with the OpenTelemetry SDK) injects W3C trace context
into each request's params._meta; mcp_server (built with feature `otel`,
run with --otlp-endpoint) must export, to an OTLP/HTTP receiver run here,
a SERVER span per request that is the child of the client's span for it,
in the client's trace. The receiver decodes the export with the official
protobuf definitions (opentelemetry-proto).

    python tests/interop/py_trace.py MCP_SERVER_BIN [--json PATH] [--svg PATH]

--json writes the trace (both sides' spans); --svg draws it (README,
"Observe": the picture is made by this script from a real trace).
Exits 0 on success; on failure prints "FAIL at step STEP: WHY" and exits 1.
"""

import argparse
import asyncio
import html
import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcp import Client
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

SERVER_KIND = 2  # opentelemetry.proto.trace.v1.Span.SPAN_KIND_SERVER


class Receiver(BaseHTTPRequestHandler):
    """POST /v1/traces (protobuf); anything else (metrics) is taken and dropped."""

    spans = []
    lock = threading.Lock()

    def do_POST(self):  # noqa: N802 - the http.server name
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path == "/v1/traces":
            export = ExportTraceServiceRequest()
            export.ParseFromString(body)
            with self.lock:
                for resource in export.resource_spans:
                    service = next(
                        (a.value.string_value for a in resource.resource.attributes if a.key == "service.name"),
                        "",
                    )
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            self.spans.append((service, span))
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


def attributes(span):
    out = {}
    for a in span.attributes:
        v = a.value
        out[a.key] = v.string_value if v.HasField("string_value") else str(v)
    return out


async def client_calls(url: str, tracer) -> None:
    with tracer.start_as_current_span("agent: look up a tool and call it"):
        async with Client(url) as client:
            await client.list_tools()
            result = await client.call_tool("echo", {"text": "traced"})
            if result.is_error:
                raise AssertionError(f"echo answered an error: {result}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("server")
    parser.add_argument("--json")
    parser.add_argument("--svg")
    args = parser.parse_args()
    step = "receiver"
    server = None
    try:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        endpoint = f"http://127.0.0.1:{httpd.server_address[1]}"

        step = "client tracer"
        memory = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "python-sdk-client"}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        trace.set_tracer_provider(provider)
        tracer = trace.get_tracer("py_trace")

        step = "server start"
        env = dict(os.environ, OTEL_SERVICE_NAME="mcp_server", RUST_LOG="warn")
        server = subprocess.Popen(
            [args.server, "--addr", "127.0.0.1:0", "--otlp-endpoint", endpoint],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        line = server.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise AssertionError(f"first line {line!r}")
        url = line.removeprefix("listening on ")

        step = "client calls"
        asyncio.run(client_calls(url, tracer))

        step = "server stop"
        # At SIGTERM the server sends what its export holds, then exits.
        server.send_signal(signal.SIGTERM)
        if server.wait(timeout=30) != 0:
            raise AssertionError(f"mcp_server exited {server.returncode}")

        step = "one trace"
        client_spans = memory.get_finished_spans()
        calls = [s for s in client_spans if s.name == "MCP send tools/call echo"]
        if len(calls) != 1:
            raise AssertionError(f"client spans {[s.name for s in client_spans]}")
        call = calls[0].get_span_context()
        with Receiver.lock:
            received = list(Receiver.spans)
        ours = [
            s
            for service, s in received
            if service == "mcp_server" and s.kind == SERVER_KIND and s.name == "tools/call echo"
        ]
        if len(ours) != 1:
            raise AssertionError(f"server spans {[(svc, s.name, s.kind) for svc, s in received]}")
        span = ours[0]
        if span.trace_id.hex() != f"{call.trace_id:032x}":
            raise AssertionError(f"trace {span.trace_id.hex()}, the client's {call.trace_id:032x}")
        if span.parent_span_id.hex() != f"{call.span_id:016x}":
            raise AssertionError(f"parent {span.parent_span_id.hex()}, the client span {call.span_id:016x}")
        attrs = attributes(span)
        for key, want in [("mcp.method.name", "tools/call"), ("gen_ai.tool.name", "echo")]:
            if attrs.get(key) != want:
                raise AssertionError(f"{key}={attrs.get(key)!r}, want {want!r}: {attrs}")

        step = "write"
        trace_id = span.trace_id.hex()
        both = [
            {
                "service": "python-sdk-client",
                "name": s.name,
                "kind": s.kind.name,
                "span_id": f"{s.context.span_id:016x}",
                "parent_id": f"{s.parent.span_id:016x}" if s.parent else "",
                "start": s.start_time,
                "end": s.end_time,
            }
            for s in client_spans
            if f"{s.context.trace_id:032x}" == trace_id
        ] + [
            {
                "service": service,
                "name": s.name,
                "kind": "SERVER" if s.kind == SERVER_KIND else str(s.kind),
                "span_id": s.span_id.hex(),
                "parent_id": s.parent_span_id.hex(),
                "start": s.start_time_unix_nano,
                "end": s.end_time_unix_nano,
                "attributes": attributes(s),
            }
            for service, s in received
            if s.trace_id.hex() == trace_id
        ]
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"trace_id": trace_id, "spans": both}, f, indent=1)
        if args.svg:
            with open(args.svg, "w") as f:
                f.write(svg(trace_id, both))
        servers = sum(1 for s in both if s["service"] == "mcp_server")
        print(f"py-trace: trace {trace_id}: {len(both) - servers} client spans, {servers} mcp_server spans, "
              f"tools/call echo a child of the client's span")
    except Exception as error:  # noqa: BLE001 - the report is the point
        print(f"py-trace: FAIL at step {step}: {type(error).__name__}: {error}")
        sys.exit(1)
    finally:
        if server is not None and server.poll() is None:
            server.kill()


def svg(trace_id: str, spans: list) -> str:
    """A waterfall of the trace: one bar per span, nested under its parent."""
    by_id = {s["span_id"]: s for s in spans}
    children = {}
    for s in spans:
        children.setdefault(s["parent_id"] if s["parent_id"] in by_id else "", []).append(s)
    rows = []

    def walk(parent, depth):
        for s in sorted(children.get(parent, []), key=lambda s: s["start"]):
            rows.append((depth, s))
            walk(s["span_id"], depth + 1)

    walk("", 0)
    t0 = min(s["start"] for s in spans)
    t1 = max(s["end"] for s in spans)
    total = max(t1 - t0, 1)
    left, width, row_h, top = 330, 560, 26, 56
    height = top + row_h * len(rows) + 40
    colors = {"python-sdk-client": "#4e79a7", "mcp_server": "#e15759"}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 90}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="10" y="20" font-size="14" font-weight="bold">One trace across the Python SDK client '
        f"and mcp_server</text>",
        f'<text x="10" y="38" fill="#555">trace {trace_id} · {total / 1e6:.1f} ms · '
        "blue: python-sdk-client (mcp 2.3) · red: mcp_server (sessionreg, OTLP)</text>",
    ]
    for i, (depth, s) in enumerate(rows):
        y = top + i * row_h
        x = left + width * (s["start"] - t0) / total
        w = max(width * (s["end"] - s["start"]) / total, 2)
        color = colors.get(s["service"], "#999")
        label = html.escape(f'{s["name"]} ({s["kind"]})')
        out.append(f'<text x="{10 + 14 * depth}" y="{y + 16}">{label}</text>')
        out.append(f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" fill="{color}" rx="2"/>')
        ms = (s["end"] - s["start"]) / 1e6
        out.append(f'<text x="{left + width + 10}" y="{y + 16}" fill="#333">{ms:.2f} ms</text>')
    out.append(
        f'<text x="10" y="{height - 12}" fill="#555">Each server span is the child of the client span whose '
        "params._meta carried its traceparent.</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
