#!/usr/bin/env python3
"""The official Python SDK's requestState sealing (mcp 2.3.0,
mcp/server/request_state.py), timed with timeit, beside
benches/sealing.rs (issue 19).

What is timed, for an application state of 64 bytes and of 1 KiB (an ASCII
string of that many bytes, as benches/sealing.rs seals that many bytes):

* seal: RequestStateBoundary._seal, what the SDK's middleware calls on an
  input_required result: the claims envelope (version, issued-at, expiry,
  method, target, a SHA-256 digest of the arguments, audience, the state),
  compact JSON, then the codec's AES-256-GCM and base64url;
* open: RequestStateBoundary._unseal, what it calls on a retry: base64url,
  AES-256-GCM, json.loads, and every claim checked (expiry, method, target,
  arguments digest, audience, principal);
* seal_open: one of each, the figure set beside sealing.rs's
  seal_open_bound (which also computes the request's binding once per
  round, as both of these do);
* codec_seal, codec_open: the codec alone (AESGCMRequestStateCodec) on a
  payload of the state's size: the crypto floor under seal and open.

The policy is the SDK's default (RequestStateSecurity.ephemeral(): one
process-local key, ten-minute TTL, principal bound by
authenticated_principal, which finds no access token here: an
unauthenticated endpoint, as in sealing.rs), and the audience a server name,
as MCPServer passes it. The request context is a stand-in with the two
fields these methods read (method, params).

usage:
  .venv/bin/python benches/sealing.py              # a table, microseconds per operation
  .venv/bin/python benches/sealing.py --json       # the same, as JSON (for --report)
  python3 benches/sealing.py --report CRITERION_DIR PY_JSON [CRITERION_DIR PY_JSON ...]
      # rounds of (criterion output of `cargo bench --bench sealing`, this
      # script's --json): both sides per round, the medians, and the ratios
"""
import json
import os
import statistics
import sys
import timeit
from types import SimpleNamespace

SIZES = [64, 1024]
# Rust functions of benches/sealing.rs, each with the Python figure beside it.
PAIRS = [
    ("seal_open", "seal_open_bound", "seal and open, the binding included (the goal's figure)"),
    ("seal", "seal", "seal"),
    ("open", "open", "open"),
]


def sdk_timings(repeat=7):
    from mcp.server.request_state import (
        AESGCMRequestStateCodec,
        RequestStateBoundary,
        RequestStateSecurity,
    )

    security = RequestStateSecurity.ephemeral()
    boundary = RequestStateBoundary(security, default_audience="bench")
    codec = AESGCMRequestStateCodec([os.urandom(32)])
    params = {
        "name": "echo",
        "arguments": {"text": "hi"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    first = SimpleNamespace(method="tools/call", params=params)
    out = {}
    for size in SIZES:
        state = "x" * size
        token = boundary._seal(first, state)
        retry = SimpleNamespace(method="tools/call", params={**params, "requestState": token})
        plaintext, _ = boundary._unseal(retry)
        assert plaintext == state
        payload = b"x" * size
        sealed = codec.seal(payload)
        assert codec.unseal(sealed) == payload

        def seal_open():
            t = boundary._seal(first, state)
            boundary._unseal(SimpleNamespace(method="tools/call", params={**params, "requestState": t}))

        cases = {
            "seal": lambda: boundary._seal(first, state),
            "open": lambda: boundary._unseal(retry),
            "seal_open": seal_open,
            "codec_seal": lambda: codec.seal(payload),
            "codec_open": lambda: codec.unseal(sealed),
        }
        for name, fn in cases.items():
            timer = timeit.Timer(fn)
            number, _ = timer.autorange()
            # Each repeat at least ~0.2 s, as autorange picks; the median of them.
            runs = timer.repeat(repeat=repeat, number=number)
            per = [r / number * 1e6 for r in runs]
            out[f"{name}/{size}"] = {"median_us": statistics.median(per), "min_us": min(per), "number": number}
    return out


def criterion_us(root, fid):
    with open(os.path.join(root, "sealing", fid, "new", "estimates.json")) as f:
        return json.load(f)["median"]["point_estimate"] / 1000.0


def report(args):
    if len(args) % 2:
        sys.exit("--report takes pairs: CRITERION_DIR PY_JSON")
    rounds = [(args[i], json.load(open(args[i + 1]))) for i in range(0, len(args), 2)]
    n = len(rounds)
    print(f"{n} round(s); per round, µs per operation (criterion's median; timeit's median of 7 repeats)\n")
    print("| operation | size | " + " | ".join(f"sessionreg r{i + 1} | Python SDK r{i + 1}" for i in range(n)) + " |")
    print("|---|---:|" + "---:|---:|" * n)
    for size in SIZES:
        for py, rust, label in PAIRS:
            cells = []
            for root, sdk in rounds:
                cells.append(f"{criterion_us(root, f'{rust}/{size}'):.3f}")
                cells.append(f"{sdk[f'{py}/{size}']['median_us']:.2f}")
            print(f"| {label} | {size} | " + " | ".join(cells) + " |")
    print("\nmedians over the rounds, and sessionreg ÷ the SDK (median of the per-round ratios):\n")
    print("| operation | size | sessionreg (µs) | Python SDK (µs) | sessionreg ÷ SDK |")
    print("|---|---:|---:|---:|---:|")
    for size in SIZES:
        for py, rust, label in PAIRS:
            ours = [criterion_us(root, f"{rust}/{size}") for root, _ in rounds]
            theirs = [sdk[f"{py}/{size}"]["median_us"] for _, sdk in rounds]
            ratio = statistics.median(a / b for a, b in zip(ours, theirs))
            print(f"| {label} | {size} | {statistics.median(ours):.3f} | {statistics.median(theirs):.2f} | {ratio:.4f}× |")
    print("\nsessionreg alone (medians over the rounds, µs):\n")
    print("| function | " + " | ".join(str(s) for s in SIZES) + " |")
    print("|---|" + "---:|" * len(SIZES))
    for fid in ["seal", "open", "seal_open", "seal_open_bound", "seal_open_single_use"]:
        cells = [f"{statistics.median(criterion_us(root, f'{fid}/{s}') for root, _ in rounds):.3f}" for s in SIZES]
        print(f"| {fid} | " + " | ".join(cells) + " |")
    binding = statistics.median(criterion_us(root, "binding") for root, _ in rounds)
    print(f"| binding (once per request) | {binding:.3f} | |")
    print("\nthe Python SDK's codec alone (medians over the rounds, µs):\n")
    for fid in ["codec_seal", "codec_open"]:
        cells = [f"{statistics.median(sdk[f'{fid}/{s}']['median_us'] for _, sdk in rounds):.2f}" for s in SIZES]
        print(f"| {fid} | " + " | ".join(cells) + " |")
    for size in SIZES:
        v = statistics.median(criterion_us(root, f"seal_open/{size}") for root, _ in rounds)
        vb = statistics.median(criterion_us(root, f"seal_open_bound/{size}") for root, _ in rounds)
        print(f"\ngoal (issue 19): seal + open under 1 µs, {size} B: {v:.3f} µs without the binding "
              f"({'met' if v < 1 else 'missed'}), {vb:.3f} µs with it ({'met' if vb < 1 else 'missed'})")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--report"]:
        return report(args[1:])
    if args and args != ["--json"]:
        sys.exit(__doc__)
    t = sdk_timings()
    if args == ["--json"]:
        json.dump(t, sys.stdout, indent=1)
        print()
        return
    from importlib.metadata import version

    print(f"mcp {version('mcp')}, Python {sys.version.split()[0]}; µs per operation\n")
    print("| operation | " + " | ".join(f"{s} B" for s in SIZES) + " |")
    print("|---|" + "---:|" * len(SIZES))
    for name in ["seal", "open", "seal_open", "codec_seal", "codec_open"]:
        print(f"| {name} | " + " | ".join(f"{t[f'{name}/{s}']['median_us']:.2f}" for s in SIZES) + " |")


if __name__ == "__main__":
    main()
