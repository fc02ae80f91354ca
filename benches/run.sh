#!/usr/bin/env bash
# Regenerates the figures of BENCHMARKS.md. The whole report, in one command:
#
#   benches/run.sh --snapshot report   # every table of BENCHMARKS.md, from a clean
#                                      # `git archive HEAD`, spliced into BENCHMARKS.md
#                                      # (benches/report.py) with benches/headline.svg;
#                                      # ~40 min on 2 cores, each step's time printed
#
# One step at a time (each writes into <target>/bench-results/):
#
#   benches/run.sh registry    # criterion, every peer at REGISTRY_THREADS (default 1,2),
#                              # REGISTRY_RUNS runs (default 3, ~5 min each), the ratio tables
#   benches/run.sh memory      # heap bytes per live session at 100k
#   benches/run.sh e2e-modern  # 2026-07-28 tools/call: mcp_server, rmcp 3.11, the Python SDK,
#                              # the TypeScript SDK v2 and hyper alone (the floor), alternating
#                              # rounds, latency, strace -c per request
#   benches/run.sh e2e-legacy  # legacy session churn: mcp_server, rmcp 3.11 and hyper alone
#   benches/run.sh e2e         # the legacy churn against rmcp only, idle sessions (issue 14's)
#   benches/run.sh e2e-alone   # end to end against examples/mcp_server only
#   benches/run.sh e2e-rmcp    # rmcp 3.11 with sessionreg-rmcp's manager against rmcp's own
#                              # LocalSessionManager (e2e-rmcp's two servers), alternating rounds
#   benches/run.sh e2e-tasks   # tasks/* over HTTP on 1k and 10k live tasks: sessionreg-rmcp's
#                              # TaskManager against rmcp's (e2e-rmcp's rmcp_tasks_server)
#   benches/run.sh e2e-before  # examples/mcp_server against another build of it (BEFORE: its
#                              # binary), alternating rounds
#   benches/run.sh callgrind   # instructions and allocations per operation and per request
#                              # (deterministic)
#   benches/run.sh sealing     # a 2026-07-28 requestState sealed and opened, beside the
#                              # Python SDK's, alternating rounds
#   benches/run.sh tasks       # the task store against rmcp 3.11's TaskManager and moka, the
#                              # slot-read floor (benches/tasks/), TASKS_RUNS criterion runs
#                              # (default 1), the tables, then heap bytes per idle task
#   benches/run.sh listen      # subscriptions/listen: RSS per idle listener (HTTP/1.1, HTTP/2) and
#                              # one resources/updated to 10,000 listeners, mcp_server beside the
#                              # Python and TypeScript SDKs' listen servers and hyper alone (the
#                              # floor), those two also under mimalloc; then the publisher's cost
#                              # per listener in-process up to 1M
#                              # (criterion, callgrind, the counting allocator)
#   benches/run.sh peers       # installs the Python and TypeScript SDK servers (benches/peers/)
#   benches/run.sh --snapshot STEP   # any step, built from a clean `git archive HEAD`
#                                    # (other people's uncommitted edits stay out)
#
# Extra arguments after a step go to its harness, e.g.
#   benches/run.sh registry --warm-up-time 0.2 --measurement-time 0.5   (a quick look)
#   benches/run.sh e2e-modern --rounds 3 --seconds 1
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
out="${BENCH_RESULTS:-$target/bench-results}"
mkdir -p "$out"
# The Python and Node with the official SDKs (benches/peers/, installed by
# the `peers` step when missing); set before --snapshot, whose export has
# neither: the snapshot uses this tree's.
export PEERS_DIR="${PEERS_DIR:-$PWD/benches/peers}"
export PYTHON="${PYTHON:-$PEERS_DIR/.venv/bin/python}"
export NODE="${NODE:-$PEERS_DIR/node_modules/.bin/node}"

if [ "${1:-}" = "--snapshot" ]; then
    shift
    src="$target/bench-src"
    rm -rf "$src" && mkdir -p "$src"
    git archive HEAD | tar -x -C "$src"
    git rev-parse --short HEAD > "$src/.commit"
    # The TypeScript peer's packages are this tree's (the export has none):
    # linked by `peers`, which installs them first when missing.
    # The report is spliced into this tree's BENCHMARKS.md.
    export REPORT_INTO="${REPORT_INTO:-$PWD}"
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

after() { echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"; }

# The release build of a bench target: its executable's path.
bench_bin() {
    cargo bench "$@" --no-run --message-format json 2>/dev/null | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("executable") and "bench" in m["target"]["kind"]: print(m["executable"])' | tail -1
}

# The Python SDK 2.3 (a venv of benches/peers/requirements.txt: tests/interop's
# pins, and uvloop and httptools, as uvicorn recommends for production) and the TypeScript
# SDK v2 server (npm ci in benches/peers/: @modelcontextprotocol/server 2.4.0,
# as tests/interop/ pins its v2 client, and Node 22 from npm's node package), each
# installed when missing, nothing globally.
peers() {
    if ! [ -x "$PYTHON" ]; then
        python3 -m venv "$PEERS_DIR/.venv"
        "$PEERS_DIR/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r benches/peers/requirements.txt
    fi
    # A venv made before the peers' own requirements gains them.
    if ! "$PYTHON" -c 'import uvloop, httptools' 2>/dev/null; then
        "$PYTHON" -m pip install --quiet --disable-pip-version-check -r benches/peers/requirements.txt
    fi
    if ! [ -x "$NODE" ]; then
        (cd "$PEERS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
    fi
    # In a snapshot, the servers run from the export, whose peers have no
    # node_modules: link this tree's (installed just above if missing).
    if [ "$(cd "$PEERS_DIR" && pwd -P)" != "$(cd benches/peers && pwd -P)" ] \
        && ! [ -e benches/peers/node_modules ]; then
        ln -s "$PEERS_DIR/node_modules" benches/peers/node_modules
    fi
    echo "python: $("$PYTHON" --version 2>&1), mcp $("$PYTHON" -c 'from importlib.metadata import version; print(version("mcp"))')"
    echo "node: $("$NODE" --version), @modelcontextprotocol/server $(python3 -c "import json; print(json.load(open('$PEERS_DIR/node_modules/@modelcontextprotocol/server/package.json'))['version'])")"
}

# The core without the ended-id proof (benches/experiments/no-ended-digest.patch:
# no digest of a slot's previous secret, so an id of a freed session is
# answered as a guess is): the floor under the memory goal that proof costs,
# measured beside the core as it is. Built from a copy of this tree with the
# patch applied, in a target directory of its own (the same package at
# another path; see --snapshot). Prints the copy's path.
UNPROVEN_TARGET="$target/bench-unproven"
unproven_tree() {
    local copy="$target/bench-unproven-src" commit
    commit=$(cat .commit 2>/dev/null || git rev-parse HEAD)
    if [ "$(cat "$copy/.unproven" 2>/dev/null)" != "$commit" ]; then
        rm -rf "$copy" && mkdir -p "$copy"
        tar -c --exclude=./target --exclude=./.git --exclude=./benches/peers/node_modules \
            --exclude=./benches/peers/.venv . | tar -x -C "$copy"
        # Outside any repository (the copy may sit in this tree's target
        # directory, where git would find this tree and skip the paths),
        # then checked as applied.
        (cd "$copy" && export GIT_CEILING_DIRECTORIES="${copy%/*}" \
            && git apply benches/experiments/no-ended-digest.patch \
            && git apply --reverse --check benches/experiments/no-ended-digest.patch)
        echo "$commit" > "$copy/.unproven"
    fi
    (cd "$copy" && CARGO_TARGET_DIR="$UNPROVEN_TARGET" cargo bench -p sessionreg \
        --no-default-features --bench memory --no-run >&2)
    echo "$copy"
}

# REGISTRY_RUNS whole runs (default 3), each criterion run's estimates kept;
# ratios.py takes the median of the runs' medians of every function.
registry() {
    local runs=${REGISTRY_RUNS:-3} dirs=()
    { machine; echo "threads: ${REGISTRY_THREADS:-1,2 (default)}"; } | tee "$out/registry.txt"
    for r in $(seq "$runs"); do
        echo "--- run $r of $runs" | tee -a "$out/registry.txt"
        rm -rf "$target/criterion/life_"* "$target/criterion/mix_"* "$target/criterion/stale_"* "$target/criterion/floor"
        cargo bench --bench registry -- "$@" >> "$out/registry.txt" 2>&1
        rm -rf "$out/criterion-run$r" && mkdir -p "$out/criterion-run$r"
        # The groups this run measured (a filter may leave some out).
        for g in "$target/criterion/"{life_,mix_,stale_}*t "$target/criterion/floor"; do
            [ -d "$g" ] && cp -r "$g" "$out/criterion-run$r/"
        done
        dirs+=("$out/criterion-run$r")
    done
    after | tee -a "$out/registry.txt"
    { machine | sed -n '1,4p'; after; echo; python3 benches/ratios.py --json "$out/registry-goals.json" "${dirs[@]}"; } > "$out/registry.md"
    cat "$out/registry.md"
}

# Then the same figure for the core without the ended-id proof (unproven_tree),
# one line that report.py reads.
memory() {
    local unproven bytes
    unproven=$(unproven_tree)
    bytes=$(cd "$unproven" && CARGO_TARGET_DIR="$UNPROVEN_TARGET" cargo bench -p sessionreg \
        --no-default-features --bench memory 2>/dev/null | awk -F'|' '$2 ~ /^ sessionreg $/ && !n++ {gsub(/ /, "", $3); print $3}')
    if [ -z "$bytes" ]; then
        echo "memory: the core without the ended-id proof printed no sessionreg row ($unproven)" >&2
        return 1
    fi
    { machine; cargo bench --bench memory -- "$@" 2>/dev/null
      echo "sessionreg without the ended-id proof (benches/experiments/no-ended-digest.patch): $bytes bytes/session"
      after; } | tee "$out/memory.md"
}

build_servers() {
    cargo build --release --example mcp_server
    cargo build --release -p e2e-rmcp
}

# What e2e-modern and e2e-legacy measure by default: 9 rounds, each
# server's turn 3 s, 16 connections (closed loop). Nine, not five: the
# goals against hyper alone are read from the median of the rounds'
# ratios, and with five rounds, whose ratios spread from 1.40x to 1.81x
# in one run, that median read 1.41x, 1.43x and 1.57x per tools/call in
# three runs whose instructions per request differed by under 3%
# (benches/HISTORY.md, 2026-12-06).
E2E_DEFAULTS=(--rounds 9 --seconds 3 --clients 16)

# 2026-07-28 requests, one POST of tools/call each and no session, by the
# same client: mcp_server against rmcp 3.11 (its stateless path, with
# TCP_NODELAY; `rmcp` with json_response, the same answer shape, which the
# goal is read against; `rmcp_sse` in its default config, answering SSE),
# the Python SDK 2.3
# server (uvicorn), the TypeScript SDK v2 server (Node) and hyper alone;
# then the system calls per request of each (strace -c -f).
e2e_modern() {
    build_servers
    peers > "$out/peers.txt"
    local e2e
    e2e=$(bench_bin --bench e2e)
    { machine; cat "$out/peers.txt"; } | tee "$out/e2e-modern.md"
    "$e2e" --modern "${E2E_DEFAULTS[@]}" --strace 2000 --json "$out/e2e-modern.json" \
        --server "mcp_server=$target/release/examples/mcp_server" \
        --against "rmcp=$target/release/rmcp_server --json-response" \
        --against "rmcp_sse=$target/release/rmcp_server" \
        --against "python_sdk=$PYTHON benches/peers/python_mcp_server.py" \
        --against "python_sdk_json=$PYTHON benches/peers/python_mcp_server.py --json-response" \
        --against "typescript_sdk=$NODE benches/peers/ts_mcp_server.mjs" \
        --against "hyper_floor=$target/release/hyper_floor" \
        "$@" 2>&1 | tee -a "$out/e2e-modern.md"
    after | tee -a "$out/e2e-modern.md"
}

# The legacy session churn (initialize, notifications/initialized,
# DELETE): mcp_server against rmcp 3.11 and hyper alone answering the same
# three requests; system calls per session; no idle step.
e2e_legacy() {
    build_servers
    local e2e
    e2e=$(bench_bin --bench e2e)
    machine | tee "$out/e2e-legacy.md"
    "$e2e" "${E2E_DEFAULTS[@]}" --idle 0 --strace 1000 --json "$out/e2e-legacy.json" \
        --server "mcp_server=$target/release/examples/mcp_server" \
        --against "rmcp=$target/release/rmcp_server" \
        --against "hyper_floor=$target/release/hyper_floor" \
        "$@" 2>&1 | tee -a "$out/e2e-legacy.md"
    after | tee -a "$out/e2e-legacy.md"
}

# sessionreg's mcp_server against rmcp 3.11 behind the same flags
# (benches/e2e-rmcp/), by the same client, in alternating rounds; then idle
# sessions.
e2e() {
    build_servers
    machine | tee "$out/e2e.md"
    cargo bench --bench e2e -- --against "rmcp=$target/release/rmcp_server" "$@" 2>&1 | tee -a "$out/e2e.md"
    after | tee -a "$out/e2e.md"
}

# The same rmcp server with two session managers: sessionreg-rmcp's
# RegistrySessionManager (rmcp_server_registry) against rmcp's
# LocalSessionManager (rmcp_server), by the same client, in alternating rounds.
e2e_rmcp() {
    cargo build --release -p e2e-rmcp
    machine | tee "$out/e2e-rmcp.md"
    cargo bench --bench e2e -- --server "registry=$target/release/rmcp_server_registry" \
        --against "local=$target/release/rmcp_server" "$@" 2>&1 | tee -a "$out/e2e-rmcp.md"
    after | tee -a "$out/e2e-rmcp.md"
}

# tasks/* over HTTP: e2e-rmcp's rmcp_tasks_server on sessionreg-rmcp's
# TaskManager against the same server on rmcp's own, at 1k and 10k live
# tasks, alternating rounds (benches/e2e --tasks).
e2e_tasks() {
    cargo build --release -p e2e-rmcp
    local e2e
    e2e=$(bench_bin --bench e2e)
    machine | tee "$out/e2e-tasks.md"
    for live in 1000 10000; do
        "$e2e" --tasks "$live" --rounds 5 --seconds 2 --clients 4 --idle 0 \
            --server "sessionreg_rmcp=$target/release/rmcp_tasks_server --tasks sessionreg" \
            --against "rmcp=$target/release/rmcp_tasks_server --tasks rmcp" \
            --json "$out/e2e-tasks-$live.json" "$@" 2>&1 | tee -a "$out/e2e-tasks.md"
    done
    after | tee -a "$out/e2e-tasks.md"
}

# A 2026-07-28 requestState sealed and opened by the layer's own sealer
# (benches/sealing.rs) and by the official Python SDK (benches/sealing.py,
# timeit), the same sizes of state, in alternating rounds (SEALING_ROUNDS,
# default 3; the first goes first in odd rounds); then the ratio tables.
sealing() {
    local rounds=${SEALING_ROUNDS:-3} pairs=() order
    peers > /dev/null
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
    after | tee -a "$out/sealing.md"
    python3 benches/sealing.py --report "${pairs[@]}" | tee -a "$out/sealing.md"
}

# Sessions end to end, this tree's mcp_server against an earlier build of
# it (BEFORE=path of its release binary; build it in a worktree of its own
# commit), by the same client, in alternating rounds (issue 18).
e2e_before() {
    local before=${BEFORE:?BEFORE=the path of the earlier release build of mcp_server}
    cargo build --release --example mcp_server
    { machine; echo "before: $before"; } | tee "$out/e2e-before.md"
    cargo bench --bench e2e -- --against "$before" "$@" 2>&1 | tee -a "$out/e2e-before.md"
    after | tee -a "$out/e2e-before.md"
}

e2e_alone() {
    cargo build --release --example mcp_server
    machine | tee "$out/e2e-alone.md"
    cargo bench --bench e2e -- "$@" 2>&1 | tee -a "$out/e2e-alone.md"
}

# Instructions (callgrind, Ir) and heap allocations per operation, each
# measured at n and 3n operations, the difference ÷ 2n, so setup (prefill,
# runtime, thread-locals, a server's start) cancels out. In-process
# (registry and task operations): allocations from the counting allocator
# (benches/support/counting.rs), which the profile binaries install. Servers
# (a request of each era): allocations are the calls to malloc, calloc,
# realloc and posix_memalign that callgrind counted in the same run.
callgrind() {
    build_servers
    local profile tprofile e2e
    profile=$(bench_bin --bench profile)
    tprofile=$(bench_bin -p tasks-bench --bench tasks_profile)
    e2e=$(bench_bin --bench e2e)
    machine | tee "$out/callgrind.md"
    python3 benches/callgrind.py --profile "$profile" --tasks-profile "$tprofile" --e2e "$e2e" \
        --mcp-server "$target/release/examples/mcp_server" --rmcp-server "$target/release/rmcp_server" \
        --hyper-floor "$target/release/hyper_floor" "$@" | tee -a "$out/callgrind.md"
    # The servers' simulated caches (benches/cache_sim.py), unless `--only`
    # asked for something else.
    case " $* " in
    *" --only servers "* | *" --only=servers "*) ;;
    *" --only"*) return 0 ;;
    esac
    python3 benches/cache_sim.py --e2e "$e2e" --server "mcp_server=$target/release/examples/mcp_server" \
        --server "hyper_floor=$target/release/hyper_floor" | tee -a "$out/callgrind.md"
}

# The task stores (benches/tasks/, the dev-only member tasks-bench):
# TASKS_RUNS whole criterion runs (default 1; rmcp's rows up to
# TASKS_RMCP_MAX running tasks, default 10,000: its prefill is quadratic),
# each one's estimates kept; ratios.py takes the median of the runs'
# medians of every function. Then heap bytes per idle task.
tasks() {
    local runs=${TASKS_RUNS:-1} dirs=()
    export TASKS_RMCP_MAX=${TASKS_RMCP_MAX:-10000}
    machine | tee "$out/tasks.txt"
    for r in $(seq "$runs"); do
        echo "--- run $r of $runs" | tee -a "$out/tasks.txt"
        rm -rf "$target/criterion/tasks_"*
        cargo bench -p tasks-bench --bench tasks -- --warm-up-time 1 --measurement-time 2 "$@" >> "$out/tasks.txt" 2>&1
        rm -rf "$out/tasks-criterion-run$r" && mkdir -p "$out/tasks-criterion-run$r"
        cp -r "$target/criterion/tasks_"* "$out/tasks-criterion-run$r/"
        dirs+=("$out/tasks-criterion-run$r")
    done
    after | tee -a "$out/tasks.txt"
    { machine | sed -n '1,4p'; after; echo; python3 benches/tasks/ratios.py --json "$out/tasks-goals.json" "${dirs[@]}"; } > "$out/tasks.md"
    cat "$out/tasks.md"
    { machine; cargo bench -p tasks-bench --bench tasks_memory 2>/dev/null; after; } | tee "$out/tasks-memory.md"
}

# subscriptions/listen (issue 26). Over sockets (benches/listen/), each
# server started afresh per measurement, rounds rotating: RSS per idle
# listener, 5,000 each on its own HTTP/1.1 connection and 5,000 multiplexed
# on HTTP/2 (100 per connection; h2c: mcp_server and hyper alone only), and
# one resources/updated to 10,000 listeners each on its own connection;
# mcp_server against the Python SDK 2.3 and TypeScript SDK v2 listen
# servers, their cap of 1,024 listen streams raised to 20,000 with their
# own knobs, and hyper alone holding SSE streams (e2e-rmcp's stream_floor)
# for the memory. In-process (benches/listen_publish.rs): the publisher's
# time per matching listener up to 1M listeners, then the instructions,
# allocations and heap bytes of the same code (benches/listen_publish.py).
# A step of `report` (about 40 minutes of it), whose goals table reads the
# three listen goals from this step's JSON; its tables are summed up in
# BENCHMARKS.md's section 8 by hand. Not a step of CI.
LISTEN_DEFAULTS=(--rss 5000 --h2 5000 --fanout 10000 --publications 5 --rounds 3)
# The RSS goal is read under glibc's malloc, as every server here runs; its
# per-thread arenas keep more of our listeners' pages than hyper alone's
# (benches/HISTORY.md, 2026-12-06 and 2026-12-07), so mcp_server and hyper
# alone also run under mimalloc (Debian's libmimalloc2.0, preloaded, no
# rebuild): the allocator's share, in the same run.
mimalloc_lib() {
    local f
    for f in /usr/lib/*/libmimalloc.so.2; do
        if [ -e "$f" ]; then echo "$f"; return; fi
    done
}
mimalloc() {
    if [ -z "$(mimalloc_lib)" ]; then
        local sudo=()
        if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
        echo "installing libmimalloc2.0 (Debian package)" >&2
        "${sudo[@]}" apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq libmimalloc2.0 >/dev/null
    fi
    local lib
    lib=$(mimalloc_lib)
    if [ -z "$lib" ]; then echo "libmimalloc.so.2 not found after installing it" >&2; return 1; fi
    echo "$lib"
}
listen() {
    build_servers
    peers > "$out/peers.txt"
    local bin pbin mi
    bin=$(bench_bin --bench listen)
    mi=$(mimalloc)
    pbin=$(bench_bin --bench listen_publish)
    { machine; cat "$out/peers.txt"; echo "settings: ${LISTEN_DEFAULTS[*]} $*"; } | tee "$out/listen.md"
    "$bin" "${LISTEN_DEFAULTS[@]}" --json "$out/listen.json" \
        --sessionreg "mcp_server=$target/release/examples/mcp_server --max-connections 20000" \
        --peer "python_sdk=$PYTHON benches/peers/python_listen_server.py --max-listeners 20000" \
        --peer "typescript_sdk=$NODE benches/peers/ts_listen_server.mjs --max-listeners 20000" \
        --floor "hyper_alone=$target/release/stream_floor" \
        --sessionreg "mcp_server_mimalloc=env LD_PRELOAD=$mi $target/release/examples/mcp_server --max-connections 20000" \
        --floor "hyper_alone_mimalloc=env LD_PRELOAD=$mi $target/release/stream_floor" \
        "$@" 2> >(tee "$out/listen-progress.log" >&2) | tee -a "$out/listen.md"
    after | tee -a "$out/listen.md"
    machine | tee "$out/listen-publish.md"
    rm -rf "$target/criterion/listen_publish_"*
    cargo bench --bench listen_publish > "$out/listen-publish-criterion.txt" 2>&1
    python3 benches/listen_publish.py --criterion "$target/criterion" --bin "$pbin" \
        --json "$out/listen-publish.json" | tee -a "$out/listen-publish.md"
    after | tee -a "$out/listen-publish.md"
}

# Every table of BENCHMARKS.md, each step timed; then the headline picture
# and the tables spliced into BENCHMARKS.md (between its <!-- table:NAME -->
# markers) by benches/report.py.
report() {
    local t0=$SECONDS t times=()
    for step in peers registry memory e2e_modern e2e_legacy e2e_rmcp e2e_tasks callgrind tasks listen; do
        t=$SECONDS
        echo "=== $step" >&2
        if [ "$step" = peers ]; then
            peers | tee "$out/peers.txt"
        else
            # In a background subshell, so that set -e stops the step at its
            # first failure (a failed harness, a wrong answer): in a `||` list
            # bash would ignore errexit inside the step.
            ( "$step" ) > "$out/$step.log" 2>&1 &
            if ! wait $!; then
                echo "step $step FAILED; its output: $out/$step.log" >&2
                tail -20 "$out/$step.log" >&2
                exit 1
            fi
        fi
        times+=("$step $((SECONDS - t)) s")
        echo "=== $step: $((SECONDS - t)) s" >&2
    done
    {
        echo "report: $((SECONDS - t0)) s in all"
        printf '%s\n' "${times[@]}"
    } | tee "$out/times.txt"
    python3 benches/headline.py "$out" "${REPORT_INTO:-.}/benches/headline.svg" \
        "$(machine | sed -n '1p;3,5p' | paste -sd ';' | sed 's/;/; /g')"
    python3 benches/report.py "$out" "${REPORT_INTO:-.}/BENCHMARKS.md"
    echo "BENCHMARKS.md and benches/headline.svg regenerated from $out" >&2
}

step=${1:-report}
[ $# -gt 0 ] && shift
case "$step" in
    registry) registry "$@" ;;
    memory) memory "$@" ;;
    e2e) e2e "$@" ;;
    e2e-alone) e2e_alone "$@" ;;
    e2e-modern) e2e_modern "$@" ;;
    e2e-legacy) e2e_legacy "$@" ;;
    e2e-rmcp) e2e_rmcp "$@" ;;
    e2e-tasks) e2e_tasks "$@" ;;
    e2e-before) e2e_before "$@" ;;
    callgrind) callgrind "$@" ;;
    sealing) sealing "$@" ;;
    tasks) tasks "$@" ;;
    listen) listen "$@" ;;
    peers) peers ;;
    report | all) report ;;
    *) echo "usage: $0 [--snapshot] [report|registry|memory|e2e-modern|e2e-legacy|e2e|e2e-alone|e2e-rmcp|e2e-tasks|e2e-before|callgrind|sealing|tasks|listen|peers] [harness args]" >&2; exit 2 ;;
esac
