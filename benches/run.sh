#!/usr/bin/env bash
# Regenerates every figure of BENCHMARKS.md. One step or all:
#
#   benches/run.sh registry    # criterion, all groups, three runs (~15 min), then the ratio tables
#   benches/run.sh memory      # heap bytes per live session at 100k
#   benches/run.sh e2e         # end to end: examples/mcp_server and rmcp (workspace member
#                              # e2e-rmcp), both up, churned in alternating rounds
#   benches/run.sh e2e-alone   # end to end against examples/mcp_server only
#   benches/run.sh e2e-modern  # 2026-07-28 requests (no session): examples/mcp_server and
#                              # rmcp (e2e-rmcp's rmcp_server, its stateless path), alternating
#   benches/run.sh e2e-rmcp    # rmcp 3.11 with sessionreg-rmcp's manager against rmcp's own
#                              # LocalSessionManager (e2e-rmcp's two servers), alternating rounds
#   benches/run.sh e2e-before  # examples/mcp_server against another build of it (BEFORE: its
#                              # binary, e.g. a worktree of b337515's
#                              # target/release/examples/mcp_server), alternating rounds
#   benches/run.sh callgrind   # instructions per operation (deterministic)
#   benches/run.sh sealing     # a 2026-07-28 requestState sealed and opened, beside the
#                              # Python SDK's (PYTHON: a venv of interop/requirements.txt,
#                              # default .venv/bin/python), alternating rounds
#   benches/run.sh tasks       # issue 20: the task store against rmcp 3.11's TaskManager and
#                              # moka (benches/tasks/), three criterion runs (~30 min), the
#                              # tables, then heap bytes per idle task (~2 min)
#   benches/run.sh             # registry, memory, e2e, callgrind and tasks, in that order,
#                              # into target/bench-results/
#   benches/run.sh --snapshot [step]   # the same, built from a clean `git archive HEAD`
#                                      # (other people's uncommitted edits in this tree
#                                      # stay out of the figures)
#
# Extra arguments after the step go to the harness, e.g.
#   benches/run.sh registry --warm-up-time 0.2 --measurement-time 0.5   (a quick look)
#   benches/run.sh e2e --sessions 50000 --clients 4
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
out="${BENCH_RESULTS:-$target/bench-results}"
mkdir -p "$out"
# The Python with the official SDK (sealing); set before --snapshot, whose
# export has no venv.
export PYTHON="${PYTHON:-$PWD/.venv/bin/python}"

if [ "${1:-}" = "--snapshot" ]; then
    shift
    src="$target/bench-src"
    rm -rf "$src" && mkdir -p "$src"
    git archive HEAD | tar -x -C "$src"
    git rev-parse --short HEAD > "$src/.commit"
    echo "building a clean export of commit $(cat "$src/.commit") in $src" >&2
    # A target directory of its own: cargo gives the export and this tree
    # the same artifact names (same package, path-independent hashes), so
    # sharing one would let each pass the other's builds off as fresh.
    BENCH_RESULTS="$out" CARGO_TARGET_DIR="$target/bench-snapshot" exec "$src/benches/run.sh" "$@"
fi

machine() {
    if [ -f .commit ]; then
        echo "commit: $(cat .commit) (clean export)"
    else
        echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src benches examples sessionreg-rmcp e2e-rmcp || echo ' plus uncommitted edits in this tree')"
    fi
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) cores"
    echo "kernel: $(uname -r); $(rustc --version)"
    echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# Three whole runs (REGISTRY_RUNS), each criterion run's estimates kept;
# ratios.py takes the median of the three medians of every function.
registry() {
    local runs=${REGISTRY_RUNS:-3} dirs=()
    machine | tee "$out/registry.txt"
    for r in $(seq "$runs"); do
        echo "--- run $r of $runs" | tee -a "$out/registry.txt"
        cargo bench --bench registry -- "$@" 2>&1 | tee -a "$out/registry.txt" | grep -E '^[a-z_0-9]+/[a-z_]+ +time:|time:' || true
        rm -rf "$out/criterion-run$r" && cp -r "$target/criterion" "$out/criterion-run$r"
        dirs+=("$out/criterion-run$r")
    done
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/registry.txt"
    python3 benches/ratios.py "${dirs[@]}" | tee "$out/registry-ratios.md"
}

memory() {
    machine | tee "$out/memory.md"
    cargo bench --bench memory -- "$@" 2>/dev/null | tee -a "$out/memory.md"
}

# sessionreg's mcp_server against rmcp 3.11 behind the same flags
# (e2e-rmcp/), by the same client, in alternating rounds.
e2e() {
    cargo build --release --example mcp_server
    cargo build --release -p e2e-rmcp
    machine | tee "$out/e2e.md"
    cargo bench --bench e2e -- --against "$target/release/rmcp_server" "$@" 2>/dev/null | tee -a "$out/e2e.md"
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/e2e.md"
}

# 2026-07-28 requests, one POST of tools/call each and no session, by the
# same client: mcp_server against rmcp 3.11 serving them on its stateless
# path (e2e-rmcp's rmcp_server: rmcp's default config; pass
# --against-flag --json-response for its JSON answers), alternating rounds.
e2e_modern() {
    cargo build --release --example mcp_server
    cargo build --release -p e2e-rmcp
    machine | tee "$out/e2e-modern.md"
    cargo bench --bench e2e -- --modern --against "$target/release/rmcp_server" "$@" 2>/dev/null | tee -a "$out/e2e-modern.md"
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/e2e-modern.md"
}

# The same rmcp server with two session managers: sessionreg-rmcp's
# RegistrySessionManager (rmcp_server_registry) against rmcp's
# LocalSessionManager (rmcp_server), by the same client, in alternating rounds.
e2e_rmcp() {
    cargo build --release -p e2e-rmcp
    machine | tee "$out/e2e-rmcp.md"
    cargo bench --bench e2e -- --server "$target/release/rmcp_server_registry" \
        --against "$target/release/rmcp_server" "$@" 2>/dev/null | tee -a "$out/e2e-rmcp.md"
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/e2e-rmcp.md"
}

# A 2026-07-28 requestState sealed and opened by the layer's own sealer
# (benches/sealing.rs) and by the official Python SDK (benches/sealing.py,
# timeit), the same sizes of state, in alternating rounds (SEALING_ROUNDS,
# default 3; the first goes first in odd rounds); then the ratio tables.
sealing() {
    local rounds=${SEALING_ROUNDS:-3} pairs=() order
    cargo bench --bench sealing --features bench-hooks --no-run
    {
        machine
        echo "python: $("$PYTHON" --version 2>&1), mcp $("$PYTHON" -c 'from importlib.metadata import version; print(version("mcp"))')"
    } | tee "$out/sealing.md"
    : > "$out/sealing-criterion.txt"
    for r in $(seq "$rounds"); do
        if [ $((r % 2)) = 1 ]; then order="sessionreg sdk"; else order="sdk sessionreg"; fi
        for who in $order; do
            echo "--- round $r: $who" | tee -a "$out/sealing.md"
            if [ "$who" = sessionreg ]; then
                cargo bench --bench sealing --features bench-hooks -- "$@" >> "$out/sealing-criterion.txt" 2>&1
                rm -rf "$out/sealing-run$r" && mkdir -p "$out/sealing-run$r"
                cp -r "$target/criterion/sealing" "$out/sealing-run$r/"
            else
                "$PYTHON" benches/sealing.py --json > "$out/sealing-py-run$r.json"
            fi
        done
        pairs+=("$out/sealing-run$r" "$out/sealing-py-run$r.json")
    done
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/sealing.md"
    python3 benches/sealing.py --report "${pairs[@]}" | tee -a "$out/sealing.md"
}

# Sessions end to end, this tree's mcp_server against an earlier build of
# it (BEFORE=path of its release binary; build it in a worktree of its own
# commit), by the same client, in alternating rounds (issue 18).
e2e_before() {
    local before=${BEFORE:?BEFORE=the path of the earlier release build of mcp_server}
    cargo build --release --example mcp_server
    { machine; echo "before: $before"; } | tee "$out/e2e-before.md"
    cargo bench --bench e2e -- --against "$before" "$@" 2>/dev/null | tee -a "$out/e2e-before.md"
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/e2e-before.md"
}

e2e_alone() {
    cargo build --release --example mcp_server
    machine | tee "$out/e2e-alone.md"
    cargo bench --bench e2e -- "$@" 2>/dev/null | tee -a "$out/e2e-alone.md"
}

# Instructions per operation: each workload at n and 3n operations, the
# difference ÷ 2n, so setup (prefill, runtime, thread-locals) cancels out.
# (papaya's epoch reclamation makes its counts move a little from run to run.)
callgrind() {
    cargo bench --bench profile --no-run
    local bin
    bin=$(cargo bench --bench profile --no-run --message-format json 2>/dev/null \
        | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("executable") and m["target"]["name"] == "profile": print(m["executable"])')
    local peers="sessionreg sessionreg_idle moka sharded_slab mutex_slab dashmap scc papaya rwlock_hashmap tokio_rwlock_string"
    ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" 2>&1 | sed -n 's/.*Collected : //p'; }
    {
        machine
        echo "Instructions per operation (callgrind, Ir; (Ir(3n) - Ir(n)) / 2n):"
        echo
        echo "| workload | $(echo $peers | sed 's/ / | /g') |"
        echo "|---|$(for _ in $peers; do printf -- '---:|'; done)"
        for w in life get stale; do
            local n=100000
            [ "$w" = life ] && n=50000
            printf '| %s |' "$w"
            for p in $peers; do
                local a b
                a=$(ir "$w" "$p" "$n"); b=$(ir "$w" "$p" $((3 * n)))
                printf ' %s |' "$(( (b - a) / (2 * n) ))"
            done
            echo
        done
    } | tee "$out/callgrind.md"
}

# The task stores (benches/tasks/, the dev-only member tasks-bench): three
# whole criterion runs (TASKS_RUNS), each one's estimates kept; ratios.py
# takes the median of the three medians of every function. Then heap bytes
# per idle task.
tasks() {
    local runs=${TASKS_RUNS:-3} dirs=()
    machine | tee "$out/tasks.txt"
    for r in $(seq "$runs"); do
        echo "--- run $r of $runs" | tee -a "$out/tasks.txt"
        rm -rf "$target/criterion/tasks_"*
        cargo bench -p tasks-bench --bench tasks -- "$@" 2>&1 | tee -a "$out/tasks.txt" | grep -E 'time:|^rmcp' || true
        rm -rf "$out/tasks-criterion-run$r" && mkdir -p "$out/tasks-criterion-run$r"
        cp -r "$target/criterion/tasks_"* "$out/tasks-criterion-run$r/"
        dirs+=("$out/tasks-criterion-run$r")
    done
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/tasks.txt"
    python3 benches/tasks/ratios.py "${dirs[@]}" | tee "$out/tasks-ratios.md"
    machine | tee "$out/tasks-memory.md"
    cargo bench -p tasks-bench --bench tasks_memory 2>/dev/null | tee -a "$out/tasks-memory.md"
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/tasks-memory.md"
}

step=${1:-all}
[ $# -gt 0 ] && shift
case "$step" in
    registry) registry "$@" ;;
    memory) memory "$@" ;;
    e2e) e2e "$@" ;;
    e2e-alone) e2e_alone "$@" ;;
    e2e-modern) e2e_modern "$@" ;;
    e2e-rmcp) e2e_rmcp "$@" ;;
    e2e-before) e2e_before "$@" ;;
    callgrind) callgrind ;;
    sealing) sealing "$@" ;;
    tasks) tasks "$@" ;;
    all) registry; memory; e2e; callgrind; tasks ;;
    *) echo "usage: $0 [--snapshot] [registry|memory|e2e|e2e-alone|e2e-modern|e2e-rmcp|e2e-before|callgrind|sealing|tasks|all] [harness args]" >&2; exit 2 ;;
esac
