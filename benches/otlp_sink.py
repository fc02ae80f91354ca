"""An OTLP/HTTP receiver for cost runs (BENCHMARKS.md, section 8, the OTLP
row): answers every export 200 with an empty (valid) protobuf response.

    python3 benches/otlp_sink.py PORT
"""
import sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
posts = {"n": 0, "bytes": 0}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        posts["n"] += 1; posts["bytes"] += len(body)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()
        sys.stderr.write(f"{self.path} {len(body)} bytes (posts {posts['n']}, total {posts['bytes']})\n")
    def log_message(self, *a): pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
