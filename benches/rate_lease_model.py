#!/usr/bin/env python3
"""How exact a fleet-wide rate limit is, decided per request in Redis (what
sessionreg does) or from batches of tokens each node leases from Redis (the
alternative issue 43 names), and how many round trips to Redis each costs:
a model of both, not of the code, run on the same arrivals.

The fleet's limit is a token bucket (GCRA's equivalent: `burst` tokens,
refilled at `count` per `window`). A principal's requests arrive at
random (Poisson, `load` times the limit's rate, for `seconds`), spread
round-robin over `nodes` nodes (the balancer).

* per decision: each request takes one token from the shared bucket (one
  round trip each); admitted exactly when the bucket has a token.
* leased: a node serves from tokens it holds; without one it leases
  min(L, available) tokens from the shared bucket (one round trip), which
  it keeps for `lease_ttl` seconds (then they are lost: a node that stops
  receiving must not keep them for ever). A request is refused when its
  node holds none and the bucket has none, even if another node holds some.

Printed per limit, load and L: requests admitted as a share of what per
decision admits, the requests refused while some node held an unused
token (refused wrongly), and round trips per request.

usage: rate_lease_model.py [--seconds S] [--seed N]
"""
import argparse
import random


def run(count, window, burst, nodes, load, seconds, lease, lease_ttl, seed):
    rate = count / window
    rng = random.Random(seed)
    t, arrivals = 0.0, []
    while True:
        t += rng.expovariate(rate * load)
        if t >= seconds:
            break
        arrivals.append(t)
    # Per decision.
    level, last, exact = float(burst), 0.0, 0
    for t in arrivals:
        level = min(burst, level + (t - last) * rate)
        last = t
        if level >= 1:
            level -= 1
            exact += 1
    # Leased.
    level, last = float(burst), 0.0
    held = [[] for _ in range(nodes)]  # per node: expiry time of each token held
    admitted = wrong = trips = 0
    for i, t in enumerate(arrivals):
        level = min(burst, level + (t - last) * rate)
        last = t
        node = i % nodes
        for h in held:
            h[:] = [e for e in h if e > t]
        if not held[node]:
            take = int(min(lease, level))
            trips += 1
            if take >= 1:
                level -= take
                held[node].extend([t + lease_ttl] * take)
        if held[node]:
            held[node].pop()
            admitted += 1
        elif any(held):
            wrong += 1
    return exact, admitted, wrong, trips, len(arrivals)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=7)
    o = ap.parse_args()
    print("| limit, 3 nodes | load | L | admitted ÷ per decision | refused wrongly | round trips per request: leased (per decision: 1) |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, count, window in [("12/m", 12, 60), ("20/s", 20, 1), ("1000/s", 1000, 1)]:
        for load in (0.5, 2.0):
            for lease in (4, 16):
                exact, admitted, wrong, trips, n = run(
                    count, window, count, 3, load, o.seconds, lease, 1.0, o.seed)
                print(f"| {label} | {load}× | {lease} | {admitted / max(exact, 1):.3f} | "
                      f"{wrong / max(n, 1) * 100:.1f}% | {trips / max(n, 1):.3f} |")
    print(f"\n{o.seconds:.0f} s of arrivals each, seed {o.seed}; leases kept 1 s; burst = the rate's count")


if __name__ == "__main__":
    main()
