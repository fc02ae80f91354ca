// The official TypeScript SDK v2 client (@modelcontextprotocol/client)
// against one of our servers: connect with the given version negotiation,
// list the tools, call one and check its text, close.
//
//   node tests/interop/ts2_client.mjs URL MODE TOOL ARGS_JSON EXPECTED_TEXT
//
// MODE: auto | legacy | a revision to pin (2026-07-28). In auto and pinned
// mode the client must settle on 2026-07-28 (our servers serve it); in
// legacy mode on a revision before it, in a session the server ends when
// the client closes.
//
// Exits 0 on success; on failure prints "FAIL at step STEP: WHY", exits 1.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, mode, tool, argsJson, expected] = process.argv.slice(2);
if (!expected) {
  console.error("usage: node ts2_client.mjs URL auto|legacy|REVISION TOOL ARGS_JSON EXPECTED_TEXT");
  process.exit(2);
}
const MODERN = "2026-07-28";
const negotiation = mode === "auto" || mode === "legacy" ? { mode } : { mode: { pin: mode } };

let step = "connect";
const fail = (why) => {
  console.log(`ts2-client: FAIL at step ${step}: ${why}`);
  process.exit(1);
};

try {
  const client = new Client({ name: "sessionreg-interop-ts2", version: "0.0.0" }, { versionNegotiation: negotiation });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);

  step = "negotiated version";
  const version = client.getNegotiatedProtocolVersion();
  if (mode === "legacy" ? version === MODERN || !version : version !== (mode === "auto" ? MODERN : mode)) {
    fail(`negotiated ${version} in ${mode} mode`);
  }

  step = "tools/list";
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  if (!names.includes(tool)) fail(`${tool} not among ${JSON.stringify(names)}`);

  step = `tools/call ${tool}`;
  const result = await client.callTool({ name: tool, arguments: JSON.parse(argsJson) });
  if (result.isError) fail(`the tool answered an error: ${JSON.stringify(result)}`);
  const texts = result.content.filter((c) => c.type === "text").map((c) => c.text);
  if (!texts.includes(expected)) fail(`texts ${JSON.stringify(texts)}, expected ${JSON.stringify(expected)}`);

  step = "close";
  if (version !== MODERN) await transport.terminateSession();
  await client.close();
  console.log(`ts2-client: ${mode} -> ${version}, ${names.length} tools, ${tool} -> ${JSON.stringify(expected)}`);
} catch (error) {
  fail(error?.stack ?? String(error));
}
