"""The official Python SDK's `Client.listen()` against one of our servers
(`subscriptions/listen`, 2026-07-28), as an application uses it: `Client(url)`
in its default mode, then `async with client.listen(...) as sub: async for
event in sub`.

    python tests/interop/py_listen.py URL READY_FILE

0. Listens for the tools list and leaves the block at once: the SDK
   closes that stream (the server counts it `disconnected`).
1. Creates two baskets, A and B (each is a resource, `basket://<id>`).
2. Listens for `basket://A` and the resources list (one list kind); the
   acknowledgement must honour both.
3. Adds an item to B (an update the stream did not ask for), then to A,
   through this client: the first event must be A's update. The SDK lets
   any `resources/updated` through once a URI was honoured, so a B update
   sent by the server would arrive first: the order proves the server
   filtered it, without waiting for something not to happen.
4. The same through a second client of the same principal: B, then A; the
   next event must be A's again. `resources/read basket://A` then answers
   both items.
5. Writes READY_FILE and iterates on: the server is shut down (SIGTERM by
   the caller), and the `async for` loop must end without
   `SubscriptionLost` (the listen request's result: the graceful close),
   with no event meanwhile. Every notification the connection carried must
   have been one asked for.

Exits 0 on success (last line: what it saw); on failure prints
"FAIL at step STEP: WHY" and exits 1.
"""

import asyncio
import sys
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated, SubscriptionLost

MODERN = "2026-07-28"
# Bounds against a server that never delivers: not measures.
EVENT_TIMEOUT_S = 20
END_TIMEOUT_S = 60


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside `error` (the client's task groups wrap them)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def describe(error: BaseException) -> str:
    return "; ".join(
        ("SubscriptionLost (the stream ended without the result): " if isinstance(e, SubscriptionLost) else "")
        + f"{type(e).__name__}: {e}"
        for e in leaves(error)
    )


def say(text: str) -> None:
    print(f"py-listen: {text}", flush=True)


async def create_basket(client: Client) -> str:
    result = await client.call_tool("basket_create", {})
    if result.is_error or not isinstance(result.structured_content, dict):
        raise AssertionError(f"basket_create answered {result}")
    return result.structured_content["basket"]


async def add(client: Client, basket: str, item: str) -> None:
    result = await client.call_tool("basket_add", {"basket": basket, "item": item})
    if result.is_error:
        raise AssertionError(f"basket_add answered an error: {result}")


async def run(url: str, ready: Path) -> None:
    step = "connect"
    wire: list[tuple[str, str | None, object]] = []

    async def record(message) -> None:  # the notifications the connection carried
        if isinstance(message, Exception):
            wire.append(("exception", None, repr(message)))
            return
        params = getattr(message.params, "model_dump", lambda **_: {})(by_alias=True)
        meta = (params or {}).get("_meta") or {}
        wire.append((message.method, (params or {}).get("uri"), meta.get("io.modelcontextprotocol/subscriptionId")))

    try:
        async with Client(url, message_handler=record) as client, Client(url) as second:
            step = "negotiated version"
            for c in (client, second):
                if c.protocol_version != MODERN:
                    raise AssertionError(f"negotiated {c.protocol_version}, expected {MODERN}")
            step = "listen, then leave"
            async with client.listen(tools_list_changed=True) as first:
                if first.honored.tools_list_changed is not True:
                    raise AssertionError(f"acknowledged {first.honored}, asked for toolsListChanged")
            say(f"subscription {first.subscription_id!r} acknowledged, then left (the SDK closes its stream)")
            wire.clear()

            step = "basket_create"
            a = await create_basket(client)
            b = await create_basket(client)
            uri_a, uri_b = f"basket://{a}", f"basket://{b}"
            say(f"{MODERN}; baskets A={uri_a} B={uri_b}")

            step = "listen"
            async with client.listen(resources_list_changed=True, resource_subscriptions=[uri_a]) as sub:
                honored = sub.honored
                if honored.resources_list_changed is not True or list(honored.resource_subscriptions or []) != [uri_a]:
                    raise AssertionError(f"acknowledged {honored}, asked for resourcesListChanged and [{uri_a}]")
                say(
                    f"acknowledged subscription {sub.subscription_id!r}: "
                    f"{honored.model_dump(by_alias=True, exclude_none=True)}"
                )
                events = aiter(sub)

                async def next_event(label: str):
                    with anyio.fail_after(EVENT_TIMEOUT_S):
                        event = await anext(events)
                    say(f"{label}: {event}")
                    return event

                step = "update after basket_add (this client)"
                await add(client, b, "not asked for")
                await add(client, a, "apple")
                event = await next_event("after basket_add B then A (this client)")
                if event != ResourceUpdated(uri=uri_a):
                    raise AssertionError(f"first event {event}, expected ResourceUpdated({uri_a})")

                step = "update after basket_add (a second client)"
                await add(second, b, "not asked for either")
                await add(second, a, "pear")
                event = await next_event("after basket_add B then A (second client)")
                if event != ResourceUpdated(uri=uri_a):
                    raise AssertionError(f"next event {event}, expected ResourceUpdated({uri_a})")

                step = "resources/read"
                [contents] = (await client.read_resource(uri_a)).contents
                items = getattr(contents, "text", "").splitlines()
                if items != ["apple", "pear"]:
                    raise AssertionError(f"resources/read {uri_a} answered {items}")

                step = "graceful end"
                ready.write_text("ready\n")
                say("ready: waiting for the server to shut down")
                late = []
                with anyio.fail_after(END_TIMEOUT_S):
                    async for event in sub:
                        late.append(event)
                if late:
                    raise AssertionError(f"events after the last update: {late}")
                say("the async for loop ended (no SubscriptionLost): the server closed the stream gracefully")

            step = "what the connection carried"
            await anyio.sleep(0)
            others = [w for w in wire if w[:2] != ("notifications/resources/updated", uri_a)]
            if others:
                raise AssertionError(f"notifications not asked for reached the client: {others}")
            ids = {w[2] for w in wire}
            if ids != {sub.subscription_id}:
                raise AssertionError(f"subscription ids on the wire {ids}, expected {{{sub.subscription_id!r}}}")
            say(f"the wire carried {len(wire)} notifications, all resources/updated {uri_a} stamped {sub.subscription_id!r}")
        print(
            f"py-listen: {MODERN}, ack {{resourcesListChanged, [basket A]}}, A's update first after B's twice "
            f"(two clients), ended gracefully on shutdown"
        )
    except Exception as error:  # noqa: BLE001 - the report is the point
        print(f"py-listen: FAIL at step {step}: {describe(error)}")
        sys.exit(1)


def main() -> None:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    asyncio.run(run(sys.argv[1], Path(sys.argv[2])))


if __name__ == "__main__":
    main()
