#!/usr/bin/env python3
"""Atomic read-modify-writes and fences per registry operation, counted as
they execute: the profile binary (benches/profile.rs) runs under callgrind
with --dump-instr=yes at n and 3n operations (its instruction count
beside, as callgrind.py counts it), every x86-64 instruction of
the binary that is `lock`-prefixed, an `xchg` with memory (implicitly
locked) or a fence (`mfence`, `sfence`, `lfence`) is found in its
disassembly, and (X(3n) - X(n)) / 2n of their execution counts is reported,
each site with its source line and inline chain (addr2line), so a count
says which atomic of the code it is.

usage: atomics.py --profile BIN [--peers P ...] [--workloads W ...]

BIN is the executable `cargo bench --bench profile --no-run` prints
(workloads life, get, stale; peers as callgrind.py's), or that of
`--bench paths_profile` (workloads delete, request, in_flight; peer
sessionreg).
Deterministic: callgrind runs one thread, and the counts depend only on
the code. Only the profile binary's own instructions are counted (a life
calls nothing with an atomic in libc: it allocates nothing).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

SIZES = {"life": 10000, "get": 20000, "stale": 20000}


def executed(out_file, binary):
    """Instruction address -> self execution count, for `binary`'s code,
    from a callgrind output file written with --dump-instr=yes."""
    counts = collections.Counter()
    names = {}
    ob = None
    addr = 0
    skip_next = False
    with open(out_file, errors="replace") as f:
        for line in f:
            m = re.match(r"(c?)ob=\((\d+)\)(?: (.*))?", line)
            if m:
                # A name is given once, on whichever ob= or cob= line
                # mentions its id first.
                if m.group(3):
                    names[m.group(2)] = m.group(3).strip()
                if not m.group(1):
                    ob = m.group(2)
                continue
            if line.startswith("calls="):
                skip_next = True
                continue
            if not line or not (line[0] in "+-*" or line.startswith("0x")):
                continue
            fields = line.split()
            a = fields[0]
            if a == "*":
                pass
            elif a.startswith("+"):
                addr += int(a[1:], 0)
            elif a.startswith("-"):
                addr -= int(a[1:], 0)
            else:
                addr = int(a, 16)
            if skip_next:
                skip_next = False
                continue
            if names.get(ob) == binary and len(fields) >= 3:
                counts[addr] += int(fields[2])
    return counts


def atomic_sites(binary):
    """Address -> mnemonic text of every locked instruction or fence."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary],
                         capture_output=True, text=True, check=True).stdout
    sites = {}
    for line in dis.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(.*)", line)
        if not m:
            continue
        text = m.group(2).strip()
        if (text.startswith("lock ") or re.match(r"[ls]?fence|mfence", text)
                or (text.startswith("xchg") and "(" in text)):
            sites[int(m.group(1), 16)] = text
    return sites


def run(binary, workload, peer, n):
    with tempfile.NamedTemporaryFile(suffix=".cg", delete=False) as t:
        path = t.name
    try:
        p = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes",
                            f"--callgrind-out-file={path}", binary, workload, peer, str(n)],
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"atomics.py: {workload} {peer} {n} failed:\n{p.stderr[-2000:]}")
        ir = int(re.search(r"Collected : (\d+)", p.stderr).group(1))
        return executed(path, os.path.realpath(binary)), ir
    finally:
        os.unlink(path)


def where(binary, addr):
    """The inline chain of `addr`, innermost first, as 'path:line
    (function)': std's frames as `library/...`, a registry crate's as
    `crate-version/...`, this workspace's relative to it."""
    out = subprocess.run(["addr2line", "-f", "-i", "-C", "-e", binary, hex(addr)],
                         capture_output=True, text=True).stdout.splitlines()
    chain = []
    for fn, loc in zip(out[0::2], out[1::2]):
        loc = re.sub(r".*?/(library/)", r"\1", loc)
        loc = re.sub(r".*/\.cargo/registry/src/[^/]+/", "", loc)
        loc = loc.replace(os.getcwd() + "/", "")
        chain.append(f"{loc} ({fn.split('<')[0][-60:]})")
    return chain


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", required=True)
    ap.add_argument("--peers", nargs="+", default=["sessionreg", "sharded_slab", "mutex_slab_id128"])
    ap.add_argument("--workloads", nargs="+", default=["life", "get", "stale"])
    o = ap.parse_args()
    binary = os.path.realpath(o.profile)
    sites = atomic_sites(binary)
    for w in o.workloads:
        n = SIZES.get(w, 10000)
        for p in o.peers:
            (one, ir1), (three, ir3) = run(binary, w, p, n), run(binary, w, p, 3 * n)
            per = {a: (three[a] - one[a]) / (2 * n) for a in sites if three[a] != one[a]}
            total = sum(per.values())
            print(f"\n{w} {p}: {total:.2f} locked instructions and fences per operation"
                  f" ({(ir3 - ir1) / (2 * n):,.0f} instructions)")
            for a, k in sorted(per.items(), key=lambda x: -x[1]):
                if k < 0.005:
                    continue
                chain = where(binary, a)
                print(f"  {k:5.2f}  {sites[a]}")
                # The atomic itself (std's frame), then the callers that
                # say which one it is.
                own = [c for c in chain if not c.startswith("library/")]
                print(f"         {chain[0]}")
                for c in own[:3]:
                    print(f"         {c}")


if __name__ == "__main__":
    main()
