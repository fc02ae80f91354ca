// The official TypeScript SDK v2 client (@modelcontextprotocol/client) with
// an OAuthClientProvider, against one of our servers run with
// --oauth-issuer: the whole flow as the SDK runs it. The first request gets
// 401 with `resource_metadata`; the SDK reads our Protected Resource
// Metadata, discovers the authorization server, and sends "the user" to
// /authorize (PKCE, `resource`, the challenged scope); the user agent here
// is a fetch that reads the redirect. `connect` then fails with
// UnauthorizedError, as the SDK's own example shows; finishAuth trades the
// code for a token, and a new transport connects with it. Then the tools
// are listed and one is called, whose text must be EXPECTED_TEXT.
//
//   node tests/interop/ts2_oauth_client.mjs URL MODE TOOL EXPECTED_TEXT
//
// MODE: auto | legacy | a revision to pin (2026-07-28). The client is
// pre-registered at the authorization server as "sessionreg-interop".
//
// Exits 0 on success; on failure prints "FAIL at step STEP: WHY", exits 1.
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";

const [url, mode, tool, expected] = process.argv.slice(2);
if (!expected) {
  console.error("usage: node ts2_oauth_client.mjs URL auto|legacy|REVISION TOOL EXPECTED_TEXT");
  process.exit(2);
}
const MODERN = "2026-07-28";
const negotiation = mode === "auto" || mode === "legacy" ? { mode } : { mode: { pin: mode } };
const REDIRECT = "http://127.0.0.1:9/callback";

let step = "connect (the OAuth flow)";
const fail = (why) => {
  console.log(`ts2-oauth: FAIL at step ${step}: ${why}`);
  process.exit(1);
};

/** An in-memory provider for one pre-registered client; the user agent follows /authorize. */
class Provider {
  visits = [];
  callback = undefined;
  _tokens = undefined;
  _verifier = undefined;
  _discovery = undefined;
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return {
      client_name: "sessionreg interop",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return { client_id: "sessionreg-interop", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" };
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = tokens;
  }
  async redirectToAuthorization(authorizationUrl) {
    this.visits.push(authorizationUrl.toString());
    for (const param of ["resource", "code_challenge", "scope"]) {
      if (!authorizationUrl.searchParams.get(param)) throw new Error(`the authorization URL has no ${param}: ${authorizationUrl}`);
    }
    const answer = await fetch(authorizationUrl, { redirect: "manual" });
    const location = answer.headers.get("location");
    if (!location) throw new Error(`/authorize answered ${answer.status}, no redirect`);
    this.callback = new URL(location).searchParams;
  }
  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }
  codeVerifier() {
    if (!this._verifier) throw new Error("no code verifier saved");
    return this._verifier;
  }
  saveDiscoveryState(state) {
    this._discovery = state;
  }
  discoveryState() {
    return this._discovery;
  }
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "tokens") this._tokens = undefined;
    if (scope === "all" || scope === "verifier") this._verifier = undefined;
    if (scope === "all" || scope === "discovery") this._discovery = undefined;
  }
}

try {
  const provider = new Provider();
  const connect = async () => {
    const client = new Client({ name: "sessionreg-interop-ts2-oauth", version: "0.0.0" }, { versionNegotiation: negotiation });
    const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    await client.connect(transport);
    return { client, transport };
  };
  let connected;
  try {
    connected = await connect();
  } catch (error) {
    if (!(error instanceof UnauthorizedError) || !provider.callback) throw error;
    step = "finishAuth";
    const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    await transport.finishAuth(provider.callback);
    step = "connect with the token";
    connected = await connect();
  }
  const { client, transport } = connected;

  step = "negotiated version";
  const version = client.getNegotiatedProtocolVersion();
  if (mode === "legacy" ? version === MODERN || !version : version !== (mode === "auto" ? MODERN : mode)) {
    fail(`negotiated ${version} in ${mode} mode`);
  }

  step = "tools/list";
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  if (!names.includes(tool)) fail(`${tool} not among ${JSON.stringify(names)}`);

  step = "the flow ran once";
  if (provider.visits.length !== 1 || !provider._tokens) {
    fail(`${provider.visits.length} authorizations, tokens ${JSON.stringify(provider._tokens)}`);
  }

  step = `tools/call ${tool}`;
  const result = await client.callTool({ name: tool, arguments: {} });
  const texts = result.content.filter((c) => c.type === "text").map((c) => c.text);
  if (result.isError || !texts.includes(expected)) fail(`texts ${JSON.stringify(texts)}, expected ${JSON.stringify(expected)}`);

  step = "close";
  if (version !== MODERN) await transport.terminateSession();
  await client.close();
  console.log(`ts2-oauth: ${mode} -> ${version}, 1 authorization (scope ${JSON.stringify(provider._tokens.scope)}), ${tool} -> ${JSON.stringify(expected)}`);
} catch (error) {
  fail(error?.stack ?? String(error));
}
