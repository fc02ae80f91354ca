// The official MCP TypeScript SDK v2 server (@modelcontextprotocol/server,
// the same 2.4.0 as tests/interop/'s v2 client), with the flags and first line of
// examples/mcp_server, for benches/e2e to measure beside it.
//
//   (cd benches/peers && npm ci)        # benches/run.sh does it when missing
//   benches/peers/node_modules/.bin/node benches/peers/ts_mcp_server.mjs --addr 127.0.0.1:0
//
// Served as the SDK's serving guide serves it on Node: `createMcpHandler`
// (one McpServer per request, from the factory; 2025-era requests through
// its default stateless legacy fallback) wrapped by `toNodeHandler` from
// @modelcontextprotocol/node, on `node:http`. One process, one event loop,
// as `node server.mjs` runs. Tools: `echo` (text), as examples/mcp_server
// has. Every other flag of examples/mcp_server is accepted and ignored.
// The Nagle algorithm is off on every accepted socket (node:http's default
// since Node 18: `noDelay: true`).

import { createServer } from 'node:http';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';

let addr = '127.0.0.1:8080';
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--addr') addr = args[++i];
  else if (args[i].startsWith('--') && i + 1 < args.length && !args[i + 1].startsWith('--')) i++;
}
const at = addr.lastIndexOf(':');
const host = addr.slice(0, at);
const port = Number(addr.slice(at + 1));

function factory() {
  const server = new McpServer({ name: 'ts-peer', version: '0.0.0' });
  server.registerTool(
    'echo',
    { description: 'Returns its text argument.', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  return server;
}

const handler = createMcpHandler(factory);
const node = toNodeHandler(handler);
const http = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, (req, res) => {
  if (new URL(req.url, 'http://x').pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  node(req, res);
});
http.listen(port, host, () => {
  const a = http.address();
  process.stdout.write(`listening on http://${a.address}:${a.port}/mcp\n`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    http.close();
    handler.close().finally(() => process.exit(0));
  });
}
