"""The official Python SDK's OAuth client (`OAuthClientProvider`) against one
of our servers run with --oauth-issuer: the whole flow, as the SDK runs it
by itself. The first request gets 401 with `resource_metadata`; the SDK
reads our Protected Resource Metadata, checks its `resource` against the
server URL, discovers the authorization server's metadata, sends the user
to /authorize with PKCE, `resource` (RFC 8707) and the challenged scope
(here "the user" is an HTTP GET that reads the redirect the authorization
server answers with), trades the code for a token and retries. Then it
lists the tools and calls one, whose text must be EXPECTED_TEXT.

    python tests/interop/py_oauth_client.py URL MODE TOOL EXPECTED_TEXT [SCOPED_TOOL SCOPE]

With SCOPED_TOOL and SCOPE (the server run with --tool-scope SCOPED_TOOL=SCOPE),
the step-up too: calling SCOPED_TOOL with the first token gets 403
`insufficient_scope` naming SCOPE; the SDK authorizes again for it by itself
and retries, and the call succeeds (the same session, in legacy mode). Then
TOOL again, whose text must now be EXPECTED_TEXT followed by " SCOPE": the
server saw the new token.

MODE: legacy (initialize, a session), 2026-07-28 (pinned, no session) or
auto (server/discover first: 2026-07-28 with our servers). The client
is pre-registered at the authorization server as "sessionreg-interop".

Exits 0 on success; on failure prints "FAIL at step STEP: WHY" and exits 1.
"""

import asyncio
import sys
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

CLIENT_ID = "sessionreg-interop"
REDIRECT = "http://127.0.0.1:9/callback"


class Storage(TokenStorage):
    """Nothing stored at first but the pre-registered client."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client = OAuthClientInformationFull(
            client_id=CLIENT_ID,
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """The user agent: follows the authorization URL to the redirect."""

    def __init__(self) -> None:
        self.visits: list[str] = []
        self.callback: dict[str, list[str]] = {}

    async def redirect(self, url: str) -> None:
        self.visits.append(url)
        query = parse_qs(urlparse(url).query)
        for param in ("resource", "code_challenge", "scope"):
            if param not in query:
                raise AssertionError(f"the authorization URL has no {param}: {url}")
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            answer = await http.get(url)
        location = answer.headers.get("location")
        if answer.status_code not in (302, 303) or not location:
            raise AssertionError(f"/authorize answered {answer.status_code}, no redirect")
        self.callback = parse_qs(urlparse(location).query)

    async def returned(self) -> AuthorizationCodeResult:
        first = lambda name: self.callback.get(name, [None])[0]  # noqa: E731
        return AuthorizationCodeResult(code=first("code"), state=first("state"), iss=first("iss"))


async def run(
    url: str, mode: str, tool: str, expected: str, scoped: str | None, scope: str | None
) -> None:
    step = "connect (the OAuth flow)"
    browser = Browser()
    storage = Storage()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="sessionreg interop",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect,
        callback_handler=browser.returned,
    )
    try:
        async with create_mcp_http_client(auth=provider) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                step = "negotiated version"
                negotiated = client.protocol_version
                modern = negotiated == "2026-07-28"
                if modern == (mode == "legacy"):
                    raise AssertionError(f"negotiated {negotiated} in mode {mode}")
                step = "tools/list"
                tools = await client.list_tools()
                names = [t.name for t in tools.tools]
                if tool not in names:
                    raise AssertionError(f"{tool} not among the listed tools {names}")
                # At 2026-07-28 pinned, the first request is tools/list.
                step = "the flow ran once"
                if len(browser.visits) != 1 or storage.tokens is None:
                    raise AssertionError(f"{len(browser.visits)} authorizations, tokens {storage.tokens}")
                step = f"tools/call {tool}"
                result = await client.call_tool(tool, {})
                texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
                if result.is_error or expected not in texts:
                    raise AssertionError(f"texts {texts}, expected {expected!r}")
                if scoped is None:
                    print(
                        f"py-oauth: {mode} -> {negotiated}, 1 authorization "
                        f"(scope {storage.tokens.scope!r}), {tool} -> {expected!r}"
                    )
                    return
                step = f"tools/call {scoped} (the step-up to {scope})"
                stepped = await client.call_tool(scoped, {})
                if stepped.is_error:
                    raise AssertionError(f"{scoped} answered a tool error: {stepped.content}")
                step = "the flow ran again for the challenged scope"
                granted = (storage.tokens.scope or "").split()
                asked = parse_qs(urlparse(browser.visits[-1]).query).get("scope", [""])[0].split()
                if len(browser.visits) != 2 or scope not in granted or scope not in asked:
                    raise AssertionError(
                        f"{len(browser.visits)} authorizations, asked {asked}, granted {granted}"
                    )
                step = f"tools/call {tool} with the stepped-up token"
                again = await client.call_tool(tool, {})
                texts = [c.text for c in again.content if getattr(c, "type", None) == "text"]
                if again.is_error or f"{expected} {scope}" not in texts:
                    raise AssertionError(f"texts {texts}, expected {expected + ' ' + scope!r}")
                print(
                    f"py-oauth: {mode} -> {negotiated}, {scoped} challenged for {scope}, "
                    f"2 authorizations (asked {' '.join(asked)!r}), {scoped} served, "
                    f"{tool} -> {texts[0]!r}"
                )
    except Exception as error:  # noqa: BLE001 - the report is the point
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        print(f"py-oauth: FAIL at step {step}: {type(error).__name__}: {error}")
        sys.exit(1)


def main() -> None:
    if len(sys.argv) not in (5, 7):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    scoped, scope = (sys.argv[5], sys.argv[6]) if len(sys.argv) == 7 else (None, None)
    asyncio.run(run(*sys.argv[1:5], scoped, scope))


if __name__ == "__main__":
    main()
