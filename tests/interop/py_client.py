"""The official Python SDK's client against one of our servers, as a user
runs it: `Client(url)` with no options (mode "auto": `server/discover`,
else `initialize`). Lists the tools, calls one, checks its text, and says
which protocol revision the client settled on.

    python tests/interop/py_client.py URL TOOL ARGS_JSON EXPECTED_TEXT [EXPECTED_VERSION]

Exits 0 on success; on failure prints "FAIL at step STEP: WHY" and exits 1.
"""

import asyncio
import json
import sys

from mcp import Client


async def run(url: str, tool: str, arguments: dict, expected: str, version: str | None) -> None:
    step = "connect"
    try:
        async with Client(url) as client:
            step = "negotiated version"
            negotiated = client.protocol_version
            if version is not None and negotiated != version:
                raise AssertionError(f"negotiated {negotiated}, expected {version}")
            step = "tools/list"
            tools = await client.list_tools()
            names = [t.name for t in tools.tools]
            if tool not in names:
                raise AssertionError(f"{tool} not among the listed tools {names}")
            step = f"tools/call {tool}"
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                raise AssertionError(f"the tool answered an error: {result}")
            texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
            if expected not in texts:
                raise AssertionError(f"texts {texts}, expected {expected!r}")
            print(f"py-client: {negotiated}, {len(names)} tools, {tool} -> {expected!r}")
    except Exception as error:  # noqa: BLE001 - the report is the point
        print(f"py-client: FAIL at step {step}: {type(error).__name__}: {error}")
        sys.exit(1)


def main() -> None:
    if len(sys.argv) not in (5, 6):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    url, tool, arguments, expected = sys.argv[1:5]
    version = sys.argv[5] if len(sys.argv) == 6 else None
    asyncio.run(run(url, tool, json.loads(arguments), expected, version))


if __name__ == "__main__":
    main()
