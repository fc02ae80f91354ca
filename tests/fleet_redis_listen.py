"""Listeners of a fleet, as a user runs them: N official Python SDK (2.3)
`Client(url)`s, each through the balancer (default mode: `server/discover`,
then 2026-07-28), each listening (`client.listen`) for updates of one
resource. Driven by tests/fleet_redis.rs, which reads what it prints:

    acked I          listener I is acknowledged
    ready            all N are
    heard I URI      listener I heard `notifications/resources/updated` for URI
    ended I          listener I's loop ended: the server closed it gracefully
    lost I WHY       listener I's stream dropped without the graceful close
    done             every loop ended

    python tests/fleet_redis_listen.py URL URI N

Exits 0 once every loop has ended (gracefully or not: the test judges), 1
on any other failure ("FAIL: WHY").
"""

import sys

import anyio
from mcp import Client
from mcp.client.subscriptions import SubscriptionLost


def say(line: str) -> None:
    print(line, flush=True)


async def listener(url: str, uri: str, i: int, acked: anyio.Event) -> None:
    async with Client(url) as client:
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            say(f"acked {i}")
            acked.set()
            try:
                async for event in subscription:
                    heard = getattr(event, "uri", None)
                    say(f"heard {i} {heard}")
            except SubscriptionLost as error:
                say(f"lost {i} {error}")
                return
            say(f"ended {i}")


async def run(url: str, uri: str, n: int) -> None:
    async with anyio.create_task_group() as group:
        for i in range(n):
            # One at a time: each is acknowledged before the next starts,
            # so the balancer's round-robin spreads them over the nodes.
            acked = anyio.Event()
            group.start_soon(listener, url, uri, i, acked)
            with anyio.fail_after(30):
                await acked.wait()
        say("ready")
    say("done")


def main() -> None:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    url, uri, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    try:
        anyio.run(run, url, uri, n)
    except BaseException as error:  # noqa: BLE001 - the report is the point
        say(f"FAIL: {type(error).__name__}: {error}")
        sys.exit(1)


if __name__ == "__main__":
    main()
