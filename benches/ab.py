#!/usr/bin/env python3
"""Tables from alternating criterion rounds, as BENCHMARKS.md quotes them.

Each round is one criterion output directory (CRITERION_HOME of one run of
a bench binary), named PREFIX-<round>, e.g. crit-base-1, crit-branch-1,
crit-base-2, ...; a figure is a function's median
(<group>/<id>/new/estimates.json, "median"), in ns.

  ab.py ab BASE_PREFIX BRANCH_PREFIX [ID_REGEX]
      two builds of the same bench: per function, both builds' figure in
      every round, their medians, branch ÷ base of the medians, and the
      median of the per-round ratios (drift between rounds cancels in it)

  ab.py peers PREFIX REF [ID_REGEX]
      one build: per group, every id's median over the rounds, and each
      id ÷ REF (same group, same round), the median of the per-round ratios

ID_REGEX filters "<group>/<id>" (default: everything found in round 1).
"""
import glob
import json
import os
import re
import statistics
import sys


def rounds(prefix):
    dirs = glob.glob(f"{prefix}-*")
    found = sorted((int(d.rsplit("-", 1)[1]), d) for d in dirs if d.rsplit("-", 1)[1].isdigit())
    if not found:
        sys.exit(f"no rounds {prefix}-<n>")
    return [d for _, d in found]


def functions(root, pattern):
    out = []
    # <group>/<id>/new or, for parameterised functions, <group>/<id>/<param>/new.
    for path in sorted(glob.glob(os.path.join(root, "**", "new", "estimates.json"), recursive=True)):
        rel = os.path.relpath(path, root).split(os.sep)
        fid = "/".join(rel[:-2])
        if re.search(pattern, fid):
            out.append(fid)
    return out


def figure(root, fid):
    path = os.path.join(root, *fid.split("/"), "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"]
    except FileNotFoundError:
        return None


def fmt(v):
    return "–" if v is None else (f"{v:,.0f}" if v >= 1000 else f"{v:.1f}" if v >= 10 else f"{v:.2f}")


def ab(base, branch, pattern=".*"):
    b_rounds, r_rounds = rounds(base), rounds(branch)
    n = min(len(b_rounds), len(r_rounds))
    b_rounds, r_rounds = b_rounds[:n], r_rounds[:n]
    print(f"{n} alternating rounds; ns per operation (criterion's median); "
          f"base {base}, branch {branch}\n")
    print(f"| function | base, rounds 1–{n} | branch, rounds 1–{n} | base median | branch median "
          "| branch ÷ base, medians | median of the per-round ratios |")
    print("|---|---|---|---:|---:|---:|---:|")
    for fid in functions(r_rounds[0], pattern):
        bs = [figure(d, fid) for d in b_rounds]
        rs = [figure(d, fid) for d in r_rounds]
        if None in bs or None in rs:
            continue
        bm, rm = statistics.median(bs), statistics.median(rs)
        per = statistics.median(r / b for r, b in zip(rs, bs))
        print(f"| {fid} | {' / '.join(fmt(v) for v in bs)} | {' / '.join(fmt(v) for v in rs)} "
              f"| {fmt(bm)} | {fmt(rm)} | {rm / bm:.2f}× | **{per:.2f}×** |")


def peers(prefix, ref, pattern=".*"):
    dirs = rounds(prefix)
    fids = functions(dirs[0], pattern)
    groups = []
    for fid in fids:
        g = fid.split("/")[0]
        if g not in groups:
            groups.append(g)
    print(f"{len(dirs)} rounds of {prefix}; ns per operation, the median of the rounds' medians; "
          f"÷ {ref}: the median of the per-round ratios\n")
    print(f"| group | id | rounds | median | ÷ {ref} |")
    print("|---|---|---|---:|---:|")
    for g in groups:
        for fid in [f for f in fids if f.startswith(g + "/")]:
            vs = [figure(d, fid) for d in dirs]
            refs = [figure(d, f"{g}/{ref}") for d in dirs]
            ratio = ("–" if None in refs else
                     f"{statistics.median(v / r for v, r in zip(vs, refs)):.2f}×")
            print(f"| {g} | {fid.split('/')[1]} | {' / '.join(fmt(v) for v in vs)} "
                  f"| {fmt(statistics.median(vs))} | {ratio} |")


def main():
    args = sys.argv[1:]
    if len(args) in (3, 4) and args[0] == "ab":
        ab(*args[1:])
    elif len(args) in (3, 4) and args[0] == "peers":
        peers(*args[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
