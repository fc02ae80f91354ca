// The official MCP TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0)
// serving `subscriptions/listen`, the smallest server that publishes a
// resource update on demand, for benches/listen to measure beside
// examples/mcp_server (memory per idle listener, the time one
// `notifications/resources/updated` takes to reach every listener).
//
//   (cd benches/peers && npm ci)        # benches/run.sh does it when missing
//   benches/peers/node_modules/.bin/node benches/peers/ts_listen_server.mjs --addr 127.0.0.1:0 \
//       --max-listeners 10000
//
// Served as ts_mcp_server.mjs is (the SDK's serving guide on Node):
// `createMcpHandler` behind `toNodeHandler` on `node:http`, one process.
// `subscriptions/listen` is the handler's own listen router over its
// in-process `InMemoryServerEventBus`. Its cap on open listen streams is
// 1,024 by default; `createMcpHandler`'s `maxSubscriptions` option is the
// SDK's public way to raise it: `--max-listeners` sets it (default: the
// SDK's 1,024). The server advertises `resources.subscribe`, without which
// the router does not honour `resourceSubscriptions`. One tool, `publish`:
// `handler.notify.resourceUpdated(uri)` (the bus delivers to every listen
// stream synchronously), then its answer.
//
// First stdout line: `listening on http://ADDR/mcp`. Other flags are
// accepted and ignored.

import { createServer } from 'node:http';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';

let addr = '127.0.0.1:8080';
let maxListeners = undefined;
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--addr') addr = args[++i];
  else if (args[i] === '--max-listeners') maxListeners = Number(args[++i]);
  else if (args[i].startsWith('--') && i + 1 < args.length && !args[i + 1].startsWith('--')) i++;
}
const at = addr.lastIndexOf(':');
const host = addr.slice(0, at);
const port = Number(addr.slice(at + 1));

let handler;

function factory() {
  const server = new McpServer(
    { name: 'ts-listen-peer', version: '0.0.0' },
    { capabilities: { resources: { subscribe: true, listChanged: true } } },
  );
  server.registerTool(
    'publish',
    {
      description: 'Publishes notifications/resources/updated for `uri` to its listeners.',
      inputSchema: z.object({ uri: z.string() }),
    },
    async ({ uri }) => {
      handler.notify.resourceUpdated(uri);
      return { content: [{ type: 'text', text: 'published' }] };
    },
  );
  return server;
}

handler = createMcpHandler(factory, maxListeners === undefined ? {} : { maxSubscriptions: maxListeners });
const node = toNodeHandler(handler);
const http = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, (req, res) => {
  if (new URL(req.url, 'http://x').pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  node(req, res);
});
http.listen({ port, host, backlog: 4096 }, () => {
  const a = http.address();
  process.stdout.write(`listening on http://${a.address}:${a.port}/mcp\n`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    http.close();
    handler.close().finally(() => process.exit(0));
  });
}
