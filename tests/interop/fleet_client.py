"""The official Python SDK's client against a fleet of mcp_server nodes,
through its load balancer, as a user runs it: `Client(url)` (mode "auto",
so 2026-07-28 without sessions), with a form-elicitation callback that
accepts.

    python tests/interop/fleet_client.py URL [ADDS]

1. Lists the tools: the SDK then mirrors every argument a tool's input
   schema marks with `x-mcp-header` into an `Mcp-Param-<Name>` header
   (the basket tools' `basket`: `Mcp-Param-Basket`), which the balancer
   routes by (deploy/render.sh, MCP_ROUTE_PARAMS=Basket).
2. Makes a basket (round-robin: on any node; its id begins with that
   node's two hex digits), adds ADDS items (default 100) to it, each call
   answering the basket's new size, and shows it: every call reached the
   basket's node, or it would answer "no basket".
3. Calls `confirm`, which answers "input required" with a sealed
   `requestState`; the SDK asks the callback and retries, and the retry
   (no routing key: round-robin) opens on whichever node it reaches, as
   the nodes share one --request-state-key-file.

Prints one line per step; exits 0 on success, 1 with "FAIL at step STEP:
WHY" otherwise. Run by `examples/fleet --python PYTHON` (before its own
clients start), which `.ci/fleet-python` runs with the venv of
tests/interop/requirements.txt.
"""

import asyncio
import sys

from mcp import Client, types


async def accept(context, params):  # noqa: ARG001 - the SDK's callback shape
    """Form elicitation: the user confirms."""
    return types.ElicitResult(action="accept", content={"confirm": True})


def texts(result) -> list[str]:
    return [c.text for c in result.content if getattr(c, "type", None) == "text"]


async def run(url: str, adds: int) -> None:
    step = "connect"
    try:
        async with Client(url, elicitation_callback=accept) as client:
            version = client.protocol_version
            step = "tools/list"
            tools = await client.list_tools()
            by_name = {t.name: t for t in tools.tools}
            for name in ("basket_create", "basket_add", "basket_show", "confirm"):
                if name not in by_name:
                    raise AssertionError(f"{name} not among the listed tools {sorted(by_name)}")
            declared = by_name["basket_add"].input_schema["properties"]["basket"].get("x-mcp-header")
            if declared != "Basket":
                raise AssertionError(f"basket_add's basket declares x-mcp-header {declared!r}")
            print(f"py-fleet: {version}, {len(by_name)} tools; basket_add mirrors basket into Mcp-Param-{declared}")

            step = "basket_create"
            made = await client.call_tool("basket_create", {})
            basket = (made.structured_content or {}).get("basket")
            if made.is_error or not isinstance(basket, str):
                raise AssertionError(f"no basket id: {made}")
            node = int(basket[:2], 16)

            for i in range(adds):
                step = f"basket_add {i + 1} of {adds}"
                added = await client.call_tool("basket_add", {"basket": basket, "item": f"item {i}"})
                if added.is_error or texts(added) != [f"{i + 1} items"]:
                    raise AssertionError(f"answered {texts(added)} (is_error={added.is_error})")
            step = "basket_show"
            shown = await client.call_tool("basket_show", {"basket": basket})
            items = texts(shown)[0].split(", ") if texts(shown) else []
            if shown.is_error or items != [f"item {i}" for i in range(adds)]:
                raise AssertionError(f"the basket holds {len(items)} items: {texts(shown)[:1]}")
            print(f"py-fleet: basket on node {node}: {adds} of {adds} basket_add calls reached it")

            step = "confirm (input required, then the retry)"
            confirmed = await client.call_tool("confirm", {"action": "ship"})
            if confirmed.is_error or texts(confirmed) != ["confirmed ship"]:
                raise AssertionError(f"answered {texts(confirmed)} (is_error={confirmed.is_error})")
            print("py-fleet: confirm -> 'confirmed ship' (the retry's sealed state opened on the node it reached)")
    except Exception as error:  # noqa: BLE001 - the report is the point
        print(f"py-fleet: FAIL at step {step}: {type(error).__name__}: {error}")
        sys.exit(1)


def main() -> None:
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    adds = int(sys.argv[2]) if len(sys.argv) == 3 else 100
    asyncio.run(run(sys.argv[1], adds))


if __name__ == "__main__":
    main()
