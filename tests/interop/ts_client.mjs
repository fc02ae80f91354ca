// Drives examples/mcp_server with the official MCP TypeScript SDK client
// (Client + StreamableHTTPClientTransport), then reads the server's /metrics.
//
//   node ts_client.mjs http://127.0.0.1:PORT/mcp
//
// Steps: baseline /metrics; connect (initialize + notifications/initialized);
// tools/list must contain `echo`; tools/call echo must return its text;
// tools/call test_reconnection must be resumed by the SDK (GET +
// Last-Event-ID after the server closed the POST stream mid-call);
// terminateSession() (DELETE) must get a 2xx; close; /metrics must then show
// sessionreg_sessions_live 0 and created_total / terminated_total{reason="deleted"}
// each moved by at least one. Exits 1 with a message naming the failed step,
// and prints every HTTP exchange the SDK made so a server-side failure can be
// routed without re-running anything.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const STEP_TIMEOUT_MS = 10_000;

const url = process.argv[2];
if (!url) {
  console.error('usage: node ts_client.mjs http://HOST:PORT/mcp');
  process.exit(2);
}
const metricsUrl = new URL('/metrics', url).toString();

// Every request the SDK sends goes through here, so a failure report can show
// exactly what was said on the wire.
const exchanges = [];
const recordingFetch = async (input, init = {}) => {
  const method = init.method ?? 'GET';
  const headers = new Headers(init.headers ?? {});
  let body = typeof init.body === 'string' ? init.body : undefined;
  const entry = {
    method,
    requestSessionId: headers.get('mcp-session-id'),
    requestProtocolVersion: headers.get('mcp-protocol-version'),
    accept: headers.get('accept'),
    lastEventId: headers.get('last-event-id'),
    body: body && body.length > 300 ? body.slice(0, 300) + '…' : body,
  };
  exchanges.push(entry);
  try {
    const res = await fetch(input, init);
    entry.status = res.status;
    entry.contentType = res.headers.get('content-type');
    entry.responseSessionId = res.headers.get('mcp-session-id');
    return res;
  } catch (err) {
    entry.error = String(err?.message ?? err);
    throw err;
  }
};

const transportErrors = [];
let phase = 'start';

function dumpExchanges() {
  console.error('  HTTP exchanges made by the SDK client:');
  for (const e of exchanges) {
    console.error('   ', JSON.stringify(e));
  }
  if (transportErrors.length) {
    console.error('  transport errors reported by the SDK:');
    for (const t of transportErrors) console.error('   ', t);
  }
}

function fail(step, message, extra) {
  console.error(`ts-client: FAIL at step "${step}": ${message}`);
  if (extra !== undefined) console.error('  detail:', typeof extra === 'string' ? extra : JSON.stringify(extra, null, 2));
  dumpExchanges();
  process.exit(1);
}

async function withTimeout(step, promise) {
  let timer;
  try {
    return await Promise.race([
      promise,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
      }),
    ]);
  } catch (err) {
    fail(step, err?.stack ?? String(err));
  } finally {
    clearTimeout(timer);
  }
}

// Prometheus text exposition -> Map("name{labels}" -> number). Labels are
// kept as written, e.g. sessionreg_sessions_terminated_total{reason="deleted"}.
async function scrape(step) {
  let res;
  try {
    res = await fetch(metricsUrl);
  } catch (err) {
    fail(step, `GET ${metricsUrl} failed: ${err?.message ?? err}`);
  }
  const text = await res.text();
  if (res.status !== 200) fail(step, `GET ${metricsUrl} answered ${res.status}`, text.slice(0, 500));
  const out = new Map();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?)\s+(\S+)/);
    if (!m) continue;
    // Normalise label spacing so `{reason = "deleted"}` and `{reason="deleted"}` agree.
    const key = m[1].replace(/\s+/g, '');
    out.set(key, Number(m[2]));
  }
  return { map: out, text };
}

function metric(scraped, key, step) {
  if (!scraped.map.has(key)) {
    fail(step, `metric ${key} is missing from /metrics`, scraped.text);
  }
  return scraped.map.get(key);
}

const LIVE = 'sessionreg_sessions_live';
const CREATED = 'sessionreg_sessions_created_total';
const DELETED = 'sessionreg_sessions_terminated_total{reason="deleted"}';

// Counters with no sample yet (a labelled series that has never been
// incremented) read as 0 before the run.
const before = await scrape('metrics-before');
const createdBefore = metric(before, CREATED, 'metrics-before');
const deletedBefore = before.map.get(DELETED) ?? 0;

phase = 'connect';
const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
transport.onerror = (err) => transportErrors.push(`[${phase}] ${err?.message ?? err}`);
const client = new Client({ name: 'sessionreg-interop-ts-client', version: '1.0.0' });

await withTimeout('connect (initialize + notifications/initialized)', client.connect(transport));
const sessionId = transport.sessionId;
if (!sessionId) fail('connect', 'server returned no Mcp-Session-Id header on initialize');
console.log(`ts-client: connected, session ${sessionId}, protocol ${transport.protocolVersion}`);

phase = 'tools/list';
const tools = await withTimeout('tools/list', client.listTools());
const names = (tools.tools ?? []).map((t) => t.name);
const echo = (tools.tools ?? []).find((t) => t.name === 'echo');
if (!echo) fail('tools/list', `no "echo" tool; tools: ${JSON.stringify(names)}`);
console.log(`ts-client: tools/list -> ${JSON.stringify(names)}`);

// Name the argument from the tool's own schema (first string property,
// preferring a required one), so the client does not guess the example's field.
const props = echo.inputSchema?.properties ?? {};
const required = echo.inputSchema?.required ?? [];
const stringProps = Object.keys(props).filter((k) => props[k]?.type === 'string');
const argName = stringProps.find((k) => required.includes(k)) ?? stringProps[0] ?? 'text';
const payload = `hello from the TypeScript SDK ${Date.now()}`;

phase = 'tools/call echo';
const result = await withTimeout('tools/call echo', client.callTool({ name: 'echo', arguments: { [argName]: payload } }));
if (result.isError) fail('tools/call echo', 'echo returned isError: true', result);
const texts = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
if (!texts.includes(payload)) {
  fail('tools/call echo', `expected a text content item equal to ${JSON.stringify(payload)}`, result);
}
console.log(`ts-client: tools/call echo -> ${JSON.stringify(texts[0])}`);

// SSE polling (2025-11-25): the test_reconnection tool has the server close
// the POST stream's connection after its priming event; the SDK must resume
// with GET + Last-Event-ID (after the priming event's retry delay) and get
// the answer from the resumed stream. Checked against servers that claim it
// (--resumption: examples/mcp_server); rmcp's example has no such tool.
if (process.argv.includes('--resumption')) {
  phase = 'tools/call test_reconnection';
  const getsBefore = exchanges.filter((e) => e.method === 'GET').length;
  const reconnected = await withTimeout(
    'tools/call test_reconnection (resumption)',
    client.callTool({ name: 'test_reconnection', arguments: {} }),
  );
  const rtexts = (reconnected.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
  if (!rtexts.includes('reconnected')) fail('tools/call test_reconnection', 'expected the text "reconnected"', reconnected);
  const resumes = exchanges.filter((e) => e.method === 'GET').slice(getsBefore).filter((e) => e.lastEventId);
  if (!resumes.length) fail('tools/call test_reconnection', 'the SDK sent no GET with Last-Event-ID: the stream was not resumed');
  if (!resumes.some((e) => e.status === 200)) fail('tools/call test_reconnection', 'no resume GET answered 200', resumes);
  console.log(`ts-client: tools/call test_reconnection -> resumed with Last-Event-ID ${resumes[0].lastEventId} (GET ${resumes[0].status})`);
}

phase = 'terminateSession';
const deletesBefore = exchanges.filter((e) => e.method === 'DELETE').length;
await withTimeout('terminateSession (DELETE)', transport.terminateSession());
const del = exchanges.filter((e) => e.method === 'DELETE').slice(deletesBefore)[0];
if (!del) fail('terminateSession', 'the SDK sent no DELETE request');
if (del.requestSessionId !== sessionId) fail('terminateSession', `DELETE carried session id ${del.requestSessionId}, expected ${sessionId}`);
if (!(del.status >= 200 && del.status < 300)) {
  // The SDK tolerates 405 (server refuses explicit termination); this server must not.
  fail('terminateSession', `DELETE answered ${del.status}, expected 2xx`);
}
console.log(`ts-client: terminateSession -> DELETE ${del.status}`);

phase = 'close';
await withTimeout('close', client.close());

const after = await scrape('metrics-after');
const live = metric(after, LIVE, 'metrics-after');
const createdAfter = metric(after, CREATED, 'metrics-after');
const deletedAfter = metric(after, DELETED, 'metrics-after');
const summary = {
  [LIVE]: live,
  [CREATED]: `${createdBefore} -> ${createdAfter}`,
  [DELETED]: `${deletedBefore} -> ${deletedAfter}`,
};
if (live !== 0) {
  await new Promise((r) => setTimeout(r, 1000));
  const later = await scrape('metrics-after (1 s later)');
  fail('metrics-after', `${LIVE} is ${live} right after the DELETE, expected 0 (1 s later: ${later.map.get(LIVE)})`, summary);
}
if (!(createdAfter >= createdBefore + 1)) fail('metrics-after', `${CREATED} did not move`, summary);
if (!(deletedAfter >= deletedBefore + 1)) fail('metrics-after', `${DELETED} did not move`, summary);
console.log(`ts-client: /metrics -> ${JSON.stringify(summary)}`);

// Errors the transport reported before the DELETE mean some exchange went
// wrong even though every call above succeeded (e.g. the GET SSE stream was
// refused with something other than 405). Report them as failures; errors
// after the DELETE (a standalone stream closed by the termination) are expected.
const early = transportErrors.filter((t) => !t.startsWith('[terminateSession]') && !t.startsWith('[close]'));
if (early.length) fail('transport', 'the SDK transport reported errors during the session', early);
if (transportErrors.length) {
  console.log(`ts-client: note: transport reported after termination: ${JSON.stringify(transportErrors)}`);
}
console.log('ts-client: ok');
process.exit(0);
