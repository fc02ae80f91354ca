// A real local authorization server for the OAuth interop step: the npm
// package oauth2-mock-server (OpenID metadata, JWKS, authorization code
// with PKCE, tokens signed with the keys it generates: one RS256, one
// ES256, used in turn), configured as an operator configures Keycloak or
// Auth0 for an MCP server:
//
// * the access token's `aud` is the RFC 8707 `resource` the client asked
//   for (Keycloak: an audience mapper; Auth0: the API identifier);
// * its `scope` is the scope the client asked for at /authorize (the
//   mock would say "dummy" otherwise), kept for the refresh token too.
//
// Its issuer is http://127.0.0.1:PORT (the mock would say localhost). The
// client is pre-registered (the mock has no registration endpoint): the
// interop clients send client_id "sessionreg-interop" and no secret.
//
//   node tests/interop/oauth_server.mjs [PORT]
//
// First stdout line: "issuer http://127.0.0.1:PORT". Runs until SIGTERM.
import { OAuth2Server } from "oauth2-mock-server";

const port = Number(process.argv[2] ?? 0);
const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");
await server.issuer.keys.generate("ES256");
await server.start(port, "127.0.0.1");
server.issuer.url = `http://127.0.0.1:${server.address().port}`;

/** What each authorization code and refresh token was granted for. */
const grants = new Map();

server.service.on("beforeAuthorizeRedirect", (redirect, req) => {
  const code = redirect.url.searchParams.get("code");
  if (code) {
    grants.set(code, { scope: req.query.scope ?? "", resource: req.query.resource });
  }
});

const grantOf = (body) =>
  grants.get(body.grant_type === "refresh_token" ? body.refresh_token : body.code) ?? { scope: "" };

server.service.on("beforeTokenSigning", (token, req) => {
  // The ID token has no scope; only the access token gets an audience here.
  if (!("scope" in token.payload)) return;
  const grant = grantOf(req.body);
  token.payload.scope = grant.scope;
  const resource = req.body.resource ?? grant.resource;
  if (resource) token.payload.aud = resource;
  if (req.body.client_id) token.payload.client_id = req.body.client_id;
});

server.service.on("beforeResponse", (response, req) => {
  const grant = grantOf(req.body);
  response.body.scope = grant.scope;
  const refresh = response.body.refresh_token;
  if (refresh) {
    grants.set(refresh, { scope: grant.scope, resource: req.body.resource ?? grant.resource });
  }
});

console.log(`issuer ${server.issuer.url}`);
const stop = async () => {
  await server.stop();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
