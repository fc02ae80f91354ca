#!/usr/bin/env bash
# Interop: our servers against MCP clients nobody here wrote, and the
# official conformance suite as the referee for protocol behaviour.
#
#   bash tests/interop/run.sh              # both targets
#   bash tests/interop/run.sh examples     # mcp_server, axum_server, conformance_server (steps 2-6)
#   bash tests/interop/run.sh rmcp_server  # sessionreg-rmcp's rmcp_server only (step 7)
#   bash tests/interop/run.sh oauth        # mcp_server as an OAuth resource server only (step 8)
#   bash tests/interop/run.sh listen       # subscriptions/listen with both official clients (step 9)
#   bash tests/interop/run.sh trace        # one trace across the Python SDK client and mcp_server (step 10)
#
# 1. npm ci in tests/interop/ (pinned: the official TypeScript SDK 1.x and v2
#    client, the official conformance suite, and Node 22 from npm's `node`
#    package, since the suite needs Node >= 22). Nothing is installed
#    globally.
# 2. A Python venv in tests/interop/.venv with the official Python SDK, pinned in
#    tests/interop/requirements.txt (kept between local runs; a clean clone makes
#    it).
# 3. cargo build --release of the three examples; each is started on
#    127.0.0.1:0 and its bound URL read from its first stdout line.
# 4. Against each of them: the Python SDK's `Client(url)` in its default
#    mode (py_client.py), and the TypeScript v2 client in `auto` mode,
#    pinned to 2026-07-28 and in `legacy` mode (ts2_client.mjs), each listing
#    the tools and calling one. Against mcp_server also the TypeScript SDK
#    1.x client (ts_client.mjs: a session, a stream the SDK must resume,
#    DELETE, then /metrics must show live 0).
# 5. The whole conformance suite against conformance_server, pinned to each
#    revision: `--requirements 2025-11-25` and `--requirements 2026-07-28`.
#    Every scenario must pass, those the revision scores (the suite's exit
#    status) and the others (the tasks extension's, the pending ones: no
#    failed check in any checks.json); no expected-failures baseline.
# 6. A few scenarios against mcp_server too (an application that is not
#    the suite's fixture: the layer's rules hold for it as well).
# 7. cargo build -p sessionreg-rmcp --example rmcp_server --example
#    rmcp_tasks_server (debug; rmcp 3.11 with sessionreg's registry as its
#    session manager), started the same way; the same clients against
#    rmcp_server, and every tasks-* scenario of the suite (the Tasks
#    extension, SEP-2663, at 2026-07-28 with --force: extension scenarios
#    are off the spec timeline) against rmcp_tasks_server on sessionreg's
#    TaskManager (INTEROP_TASKS_MANAGERS="sessionreg rmcp" also runs them on
#    rmcp's own TaskManager, for comparison). Then rmcp handlers served by
#    sessionreg::http (sessionreg_rmcp::http::StreamableHttpService): the
#    official clients against rmcp_counter, and the whole suite at both
#    revisions against rmcp_conformance (the suite's fixture as an rmcp
#    handler): every scored scenario must pass; the unscored ones it does
#    not implement (the tasks extension's, the pending ones) are listed.
#    And every tasks-* scenario against rmcp_tasks_server --service layer
#    (rmcp_tasks_layer): the same rmcp handler and sessionreg's TaskManager
#    on sessionreg::http.
# 8. OAuth (issue 29): a real authorization server on a loopback port of its
#    own (tests/interop/oauth_server.mjs: the npm package oauth2-mock-server, with
#    the audience and scope an operator configures), and cargo build
#    --features oauth --example mcp_server (debug: a functional check) run
#    as its resource server (--oauth-issuer, --resource on a port picked
#    first, --required-scope mcp:tools). The Python SDK's
#    OAuthClientProvider (py_oauth_client.py) in legacy and 2026-07-28 mode,
#    and the TypeScript v2 client's (ts2_oauth_client.mjs) in auto,
#    2026-07-28 and legacy mode each run the whole flow from a 401 (metadata,
#    discovery, PKCE, resource indicator, token) and call whoami, which
#    must answer ISSUER#johndoe with the scope granted. Then the step-up
#    (issue 43; the server runs with --tool-scope running=mcp:admin): the
#    Python SDK's client calls `running`, is challenged with 403
#    insufficient_scope, authorizes again by itself for mcp:admin too, its
#    retry is served, and whoami then names both scopes (legacy and
#    2026-07-28).
# 9. subscriptions/listen (2026-07-28, issue 26): a fresh mcp_server and
#    axum_server (release, as in step 3), each with two clients listening
#    at once: the Python SDK's `Client(url)` in its default mode
#    (py_listen.py: `async with client.listen(...) as sub: async for event
#    in sub`) and the TypeScript v2 client pinned to 2026-07-28
#    (ts2_listen.mjs: `client.listen(filter)`, `subscription.closed`). Each
#    listens for a basket it created (`basket://<id>`) and the resources
#    list, checks the acknowledgement, then adds to another basket (an
#    update the stream did not ask for) and to its own, through itself and
#    through a second client: the first update to arrive must be its own
#    basket's (order, not a wait, shows nothing else came). Each first
#    opens a listen and leaves it (the Python block exited, the TypeScript
#    subscription.close()). Once both say ready, /metrics must count two
#    streams live, four opened, two ended `disconnected`; then the server
#    gets SIGTERM: both streams must end gracefully with the listen
#    request's result (the Python loop ends without SubscriptionLost, the
#    TypeScript subscription closes 'graceful'), and the server exit 0.
# 10. One trace (issue 41): cargo build --features otel --example mcp_server
#    (debug: a functional check), run by tests/interop/py_trace.py with
#    --otlp-endpoint at an OTLP/HTTP receiver of the script's own; the
#    Python SDK's `Client(url)`, with the OpenTelemetry SDK, lists the tools
#    and calls echo: mcp_server's SERVER span `tools/call echo` must be in
#    the client's trace, the child of the client's span for that call
#    (whose params._meta carried the traceparent). About 2 s once built;
#    the build reuses .ci/run's debug build of feature otel (its clippy and
#    tests/http_otel.rs step), so it costs the example's link: under a
#    minute on two cores.
# Each server must then exit 0 on SIGTERM and log no ERROR line.
#
# One summary line per step, then "interop: N passed, M failed"; exits 1 if any
# step failed. The servers are killed on exit, whatever happens.
#
# Env: INTEROP_KEEP=1 keeps the work directory with logs and the suite's
# checks.json files. INTEROP_TASKS_MANAGERS: the task managers
# rmcp_tasks_server runs the tasks-* scenarios on (default: sessionreg).
set -euo pipefail

TARGET="${1:-all}"
case "$TARGET" in
  all | examples | rmcp_server | oauth | listen | trace) ;;
  *) echo "usage: $0 [all|examples|rmcp_server|oauth|listen|trace]" >&2; exit 2 ;;
esac
want() { [[ $TARGET == all || $TARGET == "$1" ]]; }

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SPEC_VERSION=2025-11-25
# The revisions the whole suite runs pinned to, against conformance_server.
REQUIREMENTS=(2025-11-25 2026-07-28)
# NAME or NAME@SPEC_VERSION (default $SPEC_VERSION), against mcp_server.
SCENARIOS=(
  server-initialize
  server-session-lifecycle
  tools-list
  server-sse-polling
  dns-rebinding-protection
  tools-list@2026-07-28
  http-header-validation@2026-07-28
  http-custom-header-server-validation@2026-07-28
  dns-rebinding-protection@2026-07-28
)
# The tasks extension's scenarios, against rmcp_tasks_server, at 2026-07-28.
# tasks-status-notifications is left out: the suite skips its only check
# (pending the subscriptions/listen rewrite), so it would score nothing.
TASK_SCENARIOS=(
  tasks-lifecycle
  tasks-capability-negotiation
  tasks-wire-fields
  tasks-request-state-removal
  tasks-mrtr-input
  tasks-request-headers
  tasks-dispatch-and-envelope
  tasks-required-task-error
  tasks-mrtr-composition
)
read -r -a TASK_MANAGERS <<<"${INTEROP_TASKS_MANAGERS:-sessionreg}"
STARTUP_TIMEOUT_S=30
STEP_TIMEOUT_S=120
# The whole suite at one revision: about a minute here.
SUITE_TIMEOUT_S=900

WORK="$(mktemp -d "${TMPDIR:-/tmp}/sessionreg-interop.XXXXXX")"
SERVER_PIDS=()
# Clients running in the background (the listen step), ended on exit.
CLIENT_PIDS=()
PASSED=0
FAILED=0
T0=$SECONDS

# stop_server PID -> SIGTERM, then up to 10 s for a graceful exit, then
# SIGKILL. Sets STOP_STATUS to the exit status; returns 1 if it had to be
# killed or did not exit 0 (143 means SIGTERM was not handled).
stop_server() {
  local pid=$1 exited=0
  STOP_STATUS=""
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || { exited=1; break; }; sleep 0.1; done
    if [[ $exited == 0 ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
  else
    exited=1
  fi
  wait "$pid" 2>/dev/null && STOP_STATUS=0 || STOP_STATUS=$?
  [[ $exited == 1 && $STOP_STATUS == 0 ]]
}

cleanup() {
  local rc=$?
  local pid
  for pid in "${CLIENT_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${SERVER_PIDS[@]}"; do
    stop_server "$pid" || true
  done
  if [[ "${INTEROP_KEEP:-0}" == 1 ]]; then
    echo "interop: logs kept in $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# forget_server PID -> a server stopped (and reaped) already is not stopped
# again on exit: its id may be another process's by then.
forget_server() {
  local kept=() pid
  for pid in "${SERVER_PIDS[@]}"; do [[ $pid == "$1" ]] || kept+=("$pid"); done
  SERVER_PIDS=("${kept[@]}")
}

# Abort before the steps that need what just failed; counts what did run.
abort() { echo "interop: aborted after $((SECONDS - T0))s"; echo "interop: $PASSED passed, $FAILED failed"; exit 1; }
step_ok() { PASSED=$((PASSED + 1)); printf 'interop: PASS %-45s %s\n' "$1" "$2"; }
step_fail() { FAILED=$((FAILED + 1)); printf 'interop: FAIL %-45s %s\n' "$1" "$2"; }
# Indented copy of a log, for the reader of a failure.
show_log() { sed 's/^/    | /' "$1" | tail -n "${2:-80}"; }

# ---------------------------------------------------------------- 1. npm ci
cd "$HERE"
t=$SECONDS
if ! npm ci --no-audit --no-fund --loglevel=error </dev/null >"$WORK/npm-ci.log" 2>&1; then
  step_fail npm-ci "npm ci failed in tests/interop/"
  show_log "$WORK/npm-ci.log"
  abort
fi
NODE="$HERE/node_modules/.bin/node"
CONFORMANCE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
NODE_VERSION="$("$NODE" --version 2>/dev/null || echo none)"
if [[ ! "$NODE_VERSION" =~ ^v(2[2-9]|[3-9][0-9])\. ]]; then
  step_fail npm-ci "node from npm's node package is $NODE_VERSION, need >= 22 (did its preinstall script run?)"
  abort
fi
pkg_version() { "$NODE" -p "JSON.parse(require('fs').readFileSync('node_modules/$1/package.json','utf8')).version"; }
# Scripts of the suite and the client resolve `node` through PATH too.
export PATH="$HERE/node_modules/.bin:$PATH"
step_ok npm-ci "node $NODE_VERSION, sdk $(pkg_version @modelcontextprotocol/sdk), client $(pkg_version @modelcontextprotocol/client), conformance $(pkg_version @modelcontextprotocol/conformance) ($((SECONDS - t))s)"

# ---------------------------------------------------------------- 2. Python SDK
t=$SECONDS
VENV="$HERE/.venv"
PYTHON="$VENV/bin/python"
if ! { [[ -x $PYTHON ]] || python3 -m venv "$VENV"; } >"$WORK/venv.log" 2>&1 ||
  ! "$PYTHON" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements.txt" \
    </dev/null >>"$WORK/venv.log" 2>&1; then
  step_fail python-sdk "could not make tests/interop/.venv with tests/interop/requirements.txt"
  show_log "$WORK/venv.log"
  abort
fi
step_ok python-sdk "$("$PYTHON" -c 'import importlib.metadata as m; print("mcp", m.version("mcp"))') ($((SECONDS - t))s)"

# Where cargo puts builds (CARGO_TARGET_DIR or build.target-dir may move target/).
TARGET_DIR="$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps </dev/null 2>/dev/null |
  "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))' ||
  true)"

# start_server NAME ARGS... -> sets SERVER_URL and SERVER_PID; returns 1 on failure.
# The first stdout line must be exactly "listening on http://ADDR/mcp".
start_server() {
  local name=$1
  shift
  local out="$WORK/$name.stdout" err="$WORK/$name.stderr"
  : >"$out"
  "${SERVER_CMD[@]}" "$@" </dev/null >"$out" 2>"$err" &
  SERVER_PID=$!
  SERVER_PIDS+=("$SERVER_PID")
  local deadline=$((SECONDS + STARTUP_TIMEOUT_S)) line=""
  while ((SECONDS < deadline)); do
    if IFS= read -r line <"$out" && [[ -n "$line" ]] && [[ "$(wc -l <"$out")" -ge 1 ]]; then
      break
    fi
    line=""
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$line" ]]; then
    if kill -0 "$SERVER_PID" 2>/dev/null; then
      START_ERROR="no stdout line within ${STARTUP_TIMEOUT_S}s"
    else
      START_ERROR="server exited before printing its first line"
    fi
    return 1
  fi
  if [[ ! "$line" =~ ^listening\ on\ (http://[^/[:space:]]+/mcp)$ ]]; then
    START_ERROR="first stdout line is not 'listening on http://ADDR/mcp': '$line'"
    return 1
  fi
  SERVER_URL=${BASH_REMATCH[1]}
  return 0
}

server_alive_note() {
  # Say so when a step has taken the server down.
  kill -0 "$1" 2>/dev/null || echo "    (the server process $1 is no longer running; its stderr follows)"
}

# run_ts_client LABEL URL PID NAME [ARGS] -> one step: ts_client.mjs against URL.
run_ts_client() {
  local label=$1 url=$2 pid=$3 name=$4 t=$SECONDS rc=0
  shift 4
  local log="$WORK/$label.log"
  timeout "$STEP_TIMEOUT_S" "$NODE" "$HERE/ts_client.mjs" "$url" "$@" </dev/null >"$log" 2>&1 || rc=$?
  if [[ $rc -eq 0 ]]; then
    step_ok "$label" "$(grep -o 'ts-client: /metrics -> .*' "$log" | sed 's/^ts-client: //') ($((SECONDS - t))s)"
  else
    local why
    why="$(grep -m1 'FAIL at step' "$log" || true)"
    [[ $rc -eq 124 ]] && why="timed out after ${STEP_TIMEOUT_S}s"
    step_fail "$label" "${why:-exit code $rc}"
    show_log "$log"
    server_alive_note "$pid"
    kill -0 "$pid" 2>/dev/null || show_log "$WORK/$name.stderr" 40
  fi
}

# run_client LABEL PID NAME COMMAND... -> one step: a client script whose
# last line on success names what it did, and which says "FAIL at step" when
# it does not.
run_client() {
  local label=$1 pid=$2 name=$3 t=$SECONDS rc=0
  shift 3
  local log="$WORK/$label.log"
  timeout "$STEP_TIMEOUT_S" "$@" </dev/null >"$log" 2>&1 || rc=$?
  if [[ $rc -eq 0 ]]; then
    step_ok "$label" "$(tail -n 1 "$log" | sed 's/^[a-z0-9-]*: //') ($((SECONDS - t))s)"
  else
    local why
    why="$(grep -m1 'FAIL at step' "$log" || true)"
    [[ $rc -eq 124 ]] && why="timed out after ${STEP_TIMEOUT_S}s"
    step_fail "$label" "${why:-exit code $rc}"
    show_log "$log" 40
    server_alive_note "$pid"
    kill -0 "$pid" 2>/dev/null || show_log "$WORK/$name.stderr" 40
  fi
}

# official_clients NAME URL PID TOOL ARGS EXPECTED -> the Python SDK in its
# default mode, and the TypeScript v2 client in each negotiation mode.
official_clients() {
  local name=$1 url=$2 pid=$3 tool=$4 args=$5 expected=$6 mode
  run_client "python-sdk ($name)" "$pid" "$name" "$PYTHON" "$HERE/py_client.py" "$url" "$tool" "$args" "$expected" 2026-07-28
  for mode in auto 2026-07-28 legacy; do
    run_client "ts-v2 $mode ($name)" "$pid" "$name" "$NODE" "$HERE/ts2_client.mjs" "$url" "$mode" "$tool" "$args" "$expected"
  done
}

# summarize_checks DIR -> prints "S F W" (success, failure, warning counts) and
# one line per FAILURE/WARNING check to DIR/failures.txt.
summarize_checks() {
  "$NODE" -e '
    const fs = require("fs"), path = require("path");
    const dir = process.argv[1];
    const files = [];
    const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p); else if (e.name === "checks.json") files.push(p);
    } };
    walk(dir);
    let s = 0, f = 0, w = 0; const lines = [];
    for (const file of files) for (const c of JSON.parse(fs.readFileSync(file, "utf8"))) {
      if (c.status === "SUCCESS") s++;
      else if (c.status === "FAILURE" || c.status === "WARNING") {
        if (c.status === "FAILURE") f++; else w++;
        lines.push(`${c.status} ${c.id}: ${c.errorMessage ?? ""}\n      details: ${JSON.stringify(c.details ?? {})}`);
      }
    }
    fs.writeFileSync(path.join(dir, "failures.txt"), lines.join("\n") + (lines.length ? "\n" : ""));
    console.log(`${s} ${f} ${w} ${files.length}`);
  ' "$1"
}

# run_scenario ENTRY URL PID [LABEL_SUFFIX [SUITE_ARGS...]] -> one step: the
# scenario NAME[@SPEC_VERSION] against URL.
run_scenario() {
  local entry=$1 url=$2 pid=$3 suffix=${4:-} t=$SECONDS
  shift 3
  [[ $# -gt 0 ]] && shift
  local scenario=${entry%@*} version=$SPEC_VERSION
  [[ $entry == *@* ]] && version=${entry#*@}
  local dir="$WORK/conformance/$entry$suffix"
  mkdir -p "$dir"
  local rc=0
  timeout "$STEP_TIMEOUT_S" "$NODE" "$CONFORMANCE" server \
    --url "$url" --scenario "$scenario" --spec-version "$version" "$@" -o "$dir" \
    </dev/null >"$dir/output.log" 2>&1 || rc=$?
  local counts s f w n
  counts="$(summarize_checks "$dir" 2>>"$dir/output.log" || echo "0 0 0 0")"
  read -r s f w n <<<"$counts"
  local label="conformance $entry$suffix"
  if [[ $rc -eq 0 && $n -ge 1 && $s -ge 1 && $f -eq 0 ]]; then
    if [[ $w -gt 0 ]]; then
      step_ok "$label" "$s checks passed, $w warnings ($((SECONDS - t))s)"
      sed 's/^/    /' "$dir/failures.txt"
    else
      step_ok "$label" "$s checks passed ($((SECONDS - t))s)"
    fi
    return 0
  fi
  local why="exit $rc, $s passed, $f failed, $w warnings"
  [[ $n -eq 0 ]] && why="$why, no checks.json written"
  [[ $rc -eq 124 ]] && why="$why (timed out after ${STEP_TIMEOUT_S}s)"
  step_fail "$label" "$why"
  if [[ -s "$dir/failures.txt" ]]; then
    sed 's/^/    /' "$dir/failures.txt"
  else
    show_log "$dir/output.log" 40
  fi
  server_alive_note "$pid"
  return 0
}

# run_suite REVISION URL PID [NAME [scored]] -> one step: the whole suite,
# pinned to REVISION, against the server NAME (default: conformance_server).
# With `scored`, the suite's exit status decides (every scored scenario
# passes) and the failed checks of unscored scenarios are listed, not
# counted: for a fixture that does not implement the pending and
# extension scenarios.
run_suite() {
  local revision=$1 url=$2 pid=$3 name=${4:-conformance_server} mode=${5:-all} t=$SECONDS rc=0
  local dir="$WORK/conformance/requirements-$revision-$name"
  mkdir -p "$dir"
  timeout "$SUITE_TIMEOUT_S" "$NODE" "$CONFORMANCE" server \
    --url "$url" --requirements "$revision" -o "$dir" \
    </dev/null >"$dir/output.log" 2>&1 || rc=$?
  local counts s f w n
  counts="$(summarize_checks "$dir" 2>>"$dir/output.log" || echo "0 0 0 0")"
  read -r s f w n <<<"$counts"
  local label="conformance --requirements $revision" total
  [[ $name == conformance_server ]] || label="$label ($name)"
  total="$(grep -m1 '^Total:' "$dir/output.log" || echo 'no total')"
  # Every scenario must pass, scored or not (the tasks extension's and the
  # pending ones too): the suite's exit status covers the scored ones, the
  # checks' count every one.
  if [[ $rc -eq 0 && $n -ge 1 && $s -ge 1 && $f -eq 0 ]]; then
    step_ok "$label" "$n scenarios, every check passed, $w warnings; $total ($((SECONDS - t))s)"
    return 0
  fi
  if [[ $mode == scored && $rc -eq 0 && $n -ge 1 && $s -ge 1 ]]; then
    step_ok "$label" "$n scenarios, every scored one passed; $f failed checks in unscored ones; $total ($((SECONDS - t))s)"
    sed -n '/=== SUMMARY ===/,$p' "$dir/output.log" | grep '✗' | sed 's/^/    unscored: /' || true
    return 0
  fi
  local why="exit $rc; $total"
  [[ $rc -eq 124 ]] && why="$why (timed out after ${SUITE_TIMEOUT_S}s)"
  step_fail "$label" "$why"
  sed -n '/=== SUMMARY ===/,$p' "$dir/output.log" | grep '✗' | sed 's/^/    /' || true
  # The first 60 lines, by sed alone: `| head` would end sed with SIGPIPE
  # under pipefail, and set -e would stop the run before its report.
  if [[ -s "$dir/failures.txt" ]]; then sed -n '1,60s/^/    /p' "$dir/failures.txt"; fi
  server_alive_note "$pid"
  return 0
}

# report_client LABEL LOG RC SECONDS -> one step for a client script run in
# the background: as run_client reports it.
report_client() {
  local label=$1 log=$2 rc=$3 took=$4
  if [[ $rc -eq 0 ]]; then
    step_ok "$label" "$(tail -n 1 "$log" | sed 's/^[a-z0-9-]*: //') (${took}s)"
    sed -n 's/^[a-z0-9-]*: /    /p' "$log" | sed '$d'
  else
    local why
    why="$(grep -m1 'FAIL at step' "$log" || true)"
    [[ $rc -eq 124 ]] && why="timed out after ${STEP_TIMEOUT_S}s"
    step_fail "$label" "${why:-exit code $rc}"
    show_log "$log" 40
  fi
}

# metric TEXT NAME -> the value of the sample NAME in Prometheus TEXT, or "none".
metric() { awk -v n="$2" '$1 == n { print $2; found = 1 } END { if (!found) print "none" }' <<<"$1"; }

# listen_checks SERVER -> the listen steps against a fresh SERVER (named
# SERVER_listen for the log check): the Python SDK and the TypeScript v2
# client listening at once, the server's count of their streams, then
# SIGTERM, which must end both streams gracefully and the server with 0.
listen_checks() {
  local server=$1 name="$1_listen" t=$SECONDS
  SERVER_CMD=("${TARGET_DIR:-$ROOT/target}/release/examples/$server")
  START_ERROR=""
  if ! start_server "$name" --addr 127.0.0.1:0; then
    step_fail "server-start ($name)" "$START_ERROR (${SERVER_CMD[*]} --addr 127.0.0.1:0)"
    show_log "$WORK/$name.stdout" 20
    show_log "$WORK/$name.stderr" 40
    return 0
  fi
  local pid=$SERVER_PID url=$SERVER_URL
  step_ok "server-start ($name)" "$url ($((SECONDS - t))s)"
  local py_log="$WORK/$name-py.log" ts_log="$WORK/$name-ts.log"
  local py_ready="$WORK/$name-py.ready" ts_ready="$WORK/$name-ts.ready"
  t=$SECONDS
  timeout "$STEP_TIMEOUT_S" "$PYTHON" "$HERE/py_listen.py" "$url" "$py_ready" </dev/null >"$py_log" 2>&1 &
  local py=$!
  timeout "$STEP_TIMEOUT_S" "$NODE" "$HERE/ts2_listen.mjs" "$url" "$ts_ready" </dev/null >"$ts_log" 2>&1 &
  local ts=$!
  CLIENT_PIDS=("$py" "$ts")
  # Both listening and checked, or one of them gone (it failed).
  local deadline=$((SECONDS + STEP_TIMEOUT_S))
  while ((SECONDS < deadline)); do
    [[ -f $py_ready && -f $ts_ready ]] && break
    { kill -0 "$py" 2>/dev/null && kill -0 "$ts" 2>/dev/null; } || break
    sleep 0.1
  done
  local ready=$((SECONDS - t))
  # What the server counts while both streams are open: each client opened
  # two and closed the first itself (a stream's end is seen when the server
  # notices its connection gone: looked at again for a few seconds).
  local text="" live="" left="" opened="" gone='sessionreg_listeners_ended_total{reason="disconnected"}'
  if [[ -f $py_ready && -f $ts_ready ]]; then
    for _ in $(seq 50); do
      text="$("$PYTHON" -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
        "${url%/mcp}/metrics" 2>&1 || true)"
      live="$(metric "$text" sessionreg_listeners_live)"
      left="$(metric "$text" "$gone")"
      opened="$(metric "$text" sessionreg_listeners_opened_total)"
      [[ $live == 2 && $left == 2 && $opened == 4 ]] && break
      sleep 0.2
    done
    if [[ $live == 2 && $left == 2 && $opened == 4 ]]; then
      step_ok "listen metrics ($server)" "sessionreg_listeners_live $live, _opened_total $opened, _ended_total{reason=\"disconnected\"} $left, sessionreg_publications_total $(metric "$text" sessionreg_publications_total), sessionreg_listeners_notifications_total $(metric "$text" sessionreg_listeners_notifications_total)"
    else
      step_fail "listen metrics ($server)" "live $live, opened $opened, ended disconnected $left; expected 2, 4, 2"
      grep -E '^sessionreg_(listeners|publications)' <<<"$text" | sed 's/^/    | /' || true
    fi
  fi
  # The graceful end: SIGTERM, as an operator stops it.
  t=$SECONDS
  local stopped=0
  stop_server "$pid" && stopped=1
  forget_server "$pid"
  local py_rc=0 ts_rc=0
  wait "$py" || py_rc=$?
  wait "$ts" || ts_rc=$?
  CLIENT_PIDS=()
  local took=$((SECONDS - t))
  report_client "listen python-sdk ($server)" "$py_log" "$py_rc" "$((ready + took))"
  report_client "listen ts-v2 2026-07-28 ($server)" "$ts_log" "$ts_rc" "$((ready + took))"
  if [[ $stopped == 1 ]]; then
    step_ok "server-shutdown ($name)" "exited 0 on SIGTERM with two listen streams open (${took}s)"
  elif [[ $STOP_STATUS == 137 ]]; then
    step_fail "server-shutdown ($name)" "still running 10 s after SIGTERM; killed"
  else
    step_fail "server-shutdown ($name)" "exit status $STOP_STATUS after SIGTERM, expected 0"
    show_log "$WORK/$name.stderr" 40
  fi
}

# PIDS[name]: each started server, for the shutdown and log checks.
declare -A PIDS=()

if want examples; then
  # ---------------------------------------------------------------- 3. servers
  t=$SECONDS
  if ! (cd "$ROOT" && cargo build --release --example mcp_server --example axum_server \
    --example conformance_server) </dev/null >"$WORK/build.log" 2>&1; then
    step_fail build "cargo build --release of the examples failed"
    show_log "$WORK/build.log" 40
    abort
  fi
  step_ok build "examples/mcp_server, axum_server, conformance_server ($((SECONDS - t))s)"
  declare -A URLS=()
  for name in mcp_server axum_server conformance_server; do
    t=$SECONDS
    SERVER_CMD=("${TARGET_DIR:-$ROOT/target}/release/examples/$name")
    START_ERROR=""
    if ! start_server "$name" --addr 127.0.0.1:0; then
      step_fail "server-start ($name)" "$START_ERROR (${SERVER_CMD[*]} --addr 127.0.0.1:0)"
      show_log "$WORK/$name.stdout" 20
      show_log "$WORK/$name.stderr" 40
      abort
    fi
    URLS[$name]=$SERVER_URL
    PIDS[$name]=$SERVER_PID
    step_ok "server-start ($name)" "$SERVER_URL ($((SECONDS - t))s)"
  done

  # ---------------------------------------------------------------- 4. official clients
  run_ts_client ts-client "${URLS[mcp_server]}" "${PIDS[mcp_server]}" mcp_server --resumption
  official_clients mcp_server "${URLS[mcp_server]}" "${PIDS[mcp_server]}" echo '{"text":"hi"}' hi
  official_clients axum_server "${URLS[axum_server]}" "${PIDS[axum_server]}" echo '{"text":"hi"}' hi
  official_clients conformance_server "${URLS[conformance_server]}" "${PIDS[conformance_server]}" \
    test_simple_text '{}' 'This is a simple text response for testing.'

  # ---------------------------------------------------------------- 5. the suite
  for revision in "${REQUIREMENTS[@]}"; do
    run_suite "$revision" "${URLS[conformance_server]}" "${PIDS[conformance_server]}"
  done

  # ---------------------------------------------------------------- 6. mcp_server's own
  for scenario in "${SCENARIOS[@]}"; do
    run_scenario "$scenario" "${URLS[mcp_server]}" "${PIDS[mcp_server]}"
  done

  for name in mcp_server axum_server conformance_server; do
    if ! kill -0 "${PIDS[$name]}" 2>/dev/null; then
      step_fail "server-alive ($name)" "the server exited during the run; stderr:"
      show_log "$WORK/$name.stderr" 40
    fi
  done
fi

if want rmcp_server; then
  # ---------------------------------------------------------------- 7. rmcp example
  # A debug build: the check is functional, and `cargo test` (which .ci/run
  # runs first) has built it already, where a release build of rmcp would
  # cost minutes.
  t=$SECONDS
  if ! (cd "$ROOT" && cargo build -p sessionreg-rmcp --example rmcp_server --example rmcp_tasks_server \
    --example rmcp_counter --example rmcp_conformance) </dev/null >"$WORK/build-rmcp.log" 2>&1; then
    step_fail build-rmcp "cargo build -p sessionreg-rmcp --example rmcp_server --example rmcp_tasks_server --example rmcp_counter --example rmcp_conformance failed"
    show_log "$WORK/build-rmcp.log" 40
    abort
  fi
  SERVER_CMD=("${TARGET_DIR:-$ROOT/target}/debug/examples/rmcp_server")
  step_ok build-rmcp "sessionreg-rmcp/examples/rmcp_server, rmcp_tasks_server, rmcp_counter, rmcp_conformance ($((SECONDS - t))s)"
  t=$SECONDS
  START_ERROR=""
  if ! start_server rmcp_server --addr 127.0.0.1:0; then
    step_fail "server-start (rmcp_server)" "$START_ERROR (${SERVER_CMD[*]} --addr 127.0.0.1:0)"
    show_log "$WORK/rmcp_server.stdout" 20
    show_log "$WORK/rmcp_server.stderr" 40
    abort
  fi
  PIDS[rmcp_server]=$SERVER_PID
  step_ok "server-start (rmcp_server)" "$SERVER_URL ($((SECONDS - t))s)"
  run_ts_client ts-client-rmcp "$SERVER_URL" "$SERVER_PID" rmcp_server
  official_clients rmcp_server "$SERVER_URL" "$SERVER_PID" echo '{"text":"hi"}' hi
  if ! kill -0 "${PIDS[rmcp_server]}" 2>/dev/null; then
    step_fail "server-alive (rmcp_server)" "the rmcp server exited during the run; stderr:"
    show_log "$WORK/rmcp_server.stderr" 40
  fi

  # rmcp handlers served by sessionreg::http (sessionreg_rmcp::http): the
  # counter to the official clients (each call a new handler or session:
  # add 2 answers 2), the suite's fixture to the whole suite at both
  # revisions (every scored scenario).
  for name in rmcp_counter rmcp_conformance; do
    t=$SECONDS
    SERVER_CMD=("${TARGET_DIR:-$ROOT/target}/debug/examples/$name")
    START_ERROR=""
    if ! start_server "$name" --addr 127.0.0.1:0; then
      step_fail "server-start ($name)" "$START_ERROR (${SERVER_CMD[*]} --addr 127.0.0.1:0)"
      show_log "$WORK/$name.stdout" 20
      show_log "$WORK/$name.stderr" 40
      continue
    fi
    PIDS[$name]=$SERVER_PID
    step_ok "server-start ($name)" "$SERVER_URL ($((SECONDS - t))s)"
    if [[ $name == rmcp_counter ]]; then
      official_clients "$name" "$SERVER_URL" "$SERVER_PID" add '{"by":2}' 2
    else
      for revision in 2025-11-25 2026-07-28; do
        run_suite "$revision" "$SERVER_URL" "$SERVER_PID" "$name" scored
      done
    fi
    if ! kill -0 "${PIDS[$name]}" 2>/dev/null; then
      step_fail "server-alive ($name)" "the server exited during the run; stderr:"
      show_log "$WORK/$name.stderr" 40
    fi
  done
  # The tasks extension: rmcp_tasks_server on each task manager (its name
  # for the shutdown and log checks: rmcp_tasks_server, or
  # rmcp_tasks_server_<manager> for another than sessionreg's).
  # `layer`: the same handler and sessionreg's TaskManager on sessionreg's
  # HTTP layer (`--service layer`: sessionreg_rmcp::http::StreamableHttpService).
  for manager in "${TASK_MANAGERS[@]}" layer; do
    name=rmcp_tasks_server
    [[ $manager == sessionreg ]] || name="rmcp_tasks_server_$manager"
    args=(--tasks "$manager")
    if [[ $manager == layer ]]; then
      name=rmcp_tasks_layer
      args=(--tasks sessionreg --service layer)
    fi
    t=$SECONDS
    SERVER_CMD=("${TARGET_DIR:-$ROOT/target}/debug/examples/rmcp_tasks_server" "${args[@]}")
    START_ERROR=""
    if ! start_server "$name" --addr 127.0.0.1:0; then
      step_fail "server-start ($name)" "$START_ERROR (${SERVER_CMD[*]} --addr 127.0.0.1:0)"
      show_log "$WORK/$name.stdout" 20
      show_log "$WORK/$name.stderr" 40
      continue
    fi
    PIDS[$name]=$SERVER_PID
    step_ok "server-start ($name)" "$SERVER_URL, ${args[*]} ($((SECONDS - t))s)"
    for scenario in "${TASK_SCENARIOS[@]}"; do
      run_scenario "$scenario@2026-07-28" "$SERVER_URL" "$SERVER_PID" " ($name)" --force
    done
    if ! kill -0 "${PIDS[$name]}" 2>/dev/null; then
      step_fail "server-alive ($name)" "the rmcp tasks server exited during the run; stderr:"
      show_log "$WORK/$name.stderr" 40
    fi
  done
fi

if want oauth; then
  # ---------------------------------------------------------------- 8. OAuth
  t=$SECONDS
  if ! (cd "$ROOT" && cargo build --features oauth --example mcp_server) </dev/null >"$WORK/build-oauth.log" 2>&1; then
    step_fail build-oauth "cargo build --features oauth --example mcp_server failed"
    show_log "$WORK/build-oauth.log" 40
    abort
  fi
  step_ok build-oauth "examples/mcp_server with the oauth feature, debug ($((SECONDS - t))s)"
  # The authorization server, on a port of its own.
  t=$SECONDS
  "$NODE" "$HERE/oauth_server.mjs" 0 </dev/null >"$WORK/oauth_server.stdout" 2>"$WORK/oauth_server.stderr" &
  AS_PID=$!
  SERVER_PIDS+=("$AS_PID")
  ISSUER=""
  for _ in $(seq $((STARTUP_TIMEOUT_S * 10))); do
    line="$(head -n 1 "$WORK/oauth_server.stdout" 2>/dev/null || true)"
    if [[ $line =~ ^issuer\ (http://127\.0\.0\.1:[0-9]+)$ ]]; then ISSUER=${BASH_REMATCH[1]}; break; fi
    kill -0 "$AS_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z $ISSUER ]]; then
    step_fail "server-start (oauth_server)" "no 'issuer URL' line from tests/interop/oauth_server.mjs"
    show_log "$WORK/oauth_server.stdout" 10
    show_log "$WORK/oauth_server.stderr" 40
    abort
  fi
  step_ok "server-start (oauth_server)" "oauth2-mock-server $(pkg_version oauth2-mock-server), issuer $ISSUER ($((SECONDS - t))s)"
  # The resource is the server's own URL, so its port is picked first.
  t=$SECONDS
  PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  RESOURCE="http://127.0.0.1:$PORT/mcp"
  SERVER_CMD=("${TARGET_DIR:-$ROOT/target}/debug/examples/mcp_server" --oauth-issuer "$ISSUER"
    --resource "$RESOURCE" --required-scope mcp:tools --tool-scope running=mcp:admin)
  START_ERROR=""
  if ! start_server mcp_server_oauth --addr "127.0.0.1:$PORT"; then
    step_fail "server-start (mcp_server_oauth)" "$START_ERROR (${SERVER_CMD[*]} --addr 127.0.0.1:$PORT)"
    show_log "$WORK/mcp_server_oauth.stdout" 20
    show_log "$WORK/mcp_server_oauth.stderr" 40
    abort
  fi
  PIDS[mcp_server_oauth]=$SERVER_PID
  step_ok "server-start (mcp_server_oauth)" "$SERVER_URL, resource $RESOURCE ($((SECONDS - t))s)"
  WHO="$ISSUER#johndoe mcp:tools"
  for mode in legacy 2026-07-28; do
    run_client "python-sdk oauth $mode" "$SERVER_PID" mcp_server_oauth \
      "$PYTHON" "$HERE/py_oauth_client.py" "$SERVER_URL" "$mode" whoami "$WHO"
  done
  # The step-up (the authorization page's insufficient_scope): `running`
  # needs mcp:admin beyond mcp:tools; the SDK's client is challenged with
  # 403, authorizes again for it by itself, and its retry is served.
  for mode in legacy 2026-07-28; do
    run_client "python-sdk oauth step-up $mode" "$SERVER_PID" mcp_server_oauth \
      "$PYTHON" "$HERE/py_oauth_client.py" "$SERVER_URL" "$mode" whoami "$WHO" running mcp:admin
  done
  for mode in auto 2026-07-28 legacy; do
    run_client "ts-v2 oauth $mode" "$SERVER_PID" mcp_server_oauth \
      "$NODE" "$HERE/ts2_oauth_client.mjs" "$SERVER_URL" "$mode" whoami "$WHO"
  done
  if ! kill -0 "${PIDS[mcp_server_oauth]}" 2>/dev/null; then
    step_fail "server-alive (mcp_server_oauth)" "the server exited during the run; stderr:"
    show_log "$WORK/mcp_server_oauth.stderr" 40
  fi
fi

if want listen; then
  # ---------------------------------------------------------------- 9. listen
  t=$SECONDS
  if ! (cd "$ROOT" && cargo build --release --example mcp_server --example axum_server) \
    </dev/null >"$WORK/build-listen.log" 2>&1; then
    step_fail build-listen "cargo build --release --example mcp_server --example axum_server failed"
    show_log "$WORK/build-listen.log" 40
    abort
  fi
  step_ok build-listen "examples/mcp_server, axum_server ($((SECONDS - t))s)"
  for server in mcp_server axum_server; do
    listen_checks "$server"
  done
fi

if want trace; then
  # ---------------------------------------------------------------- 10. trace
  t=$SECONDS
  if ! (cd "$ROOT" && cargo build --features otel --example mcp_server) </dev/null >"$WORK/build-otel.log" 2>&1; then
    step_fail build-otel "cargo build --features otel --example mcp_server failed"
    show_log "$WORK/build-otel.log" 40
    abort
  fi
  step_ok build-otel "examples/mcp_server with the otel feature, debug ($((SECONDS - t))s)"
  t=$SECONDS
  if timeout "$STEP_TIMEOUT_S" "$PYTHON" "$HERE/py_trace.py" "${TARGET_DIR:-$ROOT/target}/debug/examples/mcp_server" \
    </dev/null >"$WORK/py_trace.log" 2>&1; then
    step_ok "python-sdk trace" "$(tail -n 1 "$WORK/py_trace.log") ($((SECONDS - t))s)"
  else
    step_fail "python-sdk trace" "$(grep -m1 'FAIL at step' "$WORK/py_trace.log" || echo "exit code $?")"
    show_log "$WORK/py_trace.log" 40
  fi
fi

# SIGTERM must shut each server down gracefully, and a run of well-behaved
# clients must not make a server log an error (shutdown included).
for name in mcp_server axum_server conformance_server rmcp_server rmcp_counter rmcp_conformance \
  rmcp_tasks_server rmcp_tasks_server_rmcp rmcp_tasks_layer mcp_server_oauth mcp_server_listen axum_server_listen; do
  [[ -f "$WORK/$name.stderr" ]] || continue
  pid=${PIDS[$name]:-}
  t=$SECONDS
  if [[ -n "$pid" ]]; then
    if stop_server "$pid"; then
      step_ok "server-shutdown ($name)" "exited 0 on SIGTERM ($((SECONDS - t))s)"
    elif [[ $STOP_STATUS == 137 ]]; then
      step_fail "server-shutdown ($name)" "still running 10 s after SIGTERM; killed"
    else
      step_fail "server-shutdown ($name)" "exit status $STOP_STATUS after SIGTERM, expected 0"
    fi
  fi
  sed 's/\x1b\[[0-9;]*m//g' "$WORK/$name.stderr" >"$WORK/$name.stderr.plain"
  if grep -q -E '(^|[[:space:]])(ERROR|panicked)([[:space:]]|$)' "$WORK/$name.stderr.plain"; then
    step_fail "server-log ($name)" "the server logged errors during the run:"
    # sed, not head: a reader that exits early would SIGPIPE grep under pipefail.
    grep -E '(^|[[:space:]])(ERROR|panicked)([[:space:]]|$)' "$WORK/$name.stderr.plain" | sed -n 's/^/    | /;1,20p'
  else
    step_ok "server-log ($name)" "no ERROR lines in the server's stderr"
  fi
done

echo "interop: finished in $((SECONDS - T0))s"
echo "interop: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
