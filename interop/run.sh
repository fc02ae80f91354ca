#!/usr/bin/env bash
# Interop: examples/mcp_server, and the rmcp example of sessionreg-rmcp,
# against MCP clients nobody here wrote.
#
#   bash interop/run.sh              # both targets
#   bash interop/run.sh mcp_server   # examples/mcp_server only (steps 2-4)
#   bash interop/run.sh rmcp_server  # sessionreg-rmcp's rmcp_server only (step 5)
#
# 1. npm ci in interop/ (pinned: the official TypeScript SDK, the official
#    conformance suite, and Node 22 from npm's `node` package, since the suite
#    needs Node >= 22). Nothing is installed globally.
# 2. cargo build --release --example mcp_server, start it on 127.0.0.1:0 and
#    read the bound URL from its first stdout line.
# 3. ts_client.mjs: Client + StreamableHTTPClientTransport, connect, tools/list,
#    call echo, call test_reconnection (the SDK must resume the stream the
#    server closed mid-call: GET + Last-Event-ID), terminateSession(), then
#    /metrics must show live 0.
# 4. The conformance suite's server scenarios, one by one, at spec 2025-11-25
#    (and those that apply at 2026-07-28, served session-less).
#    dns-rebinding-protection runs against a second instance started with
#    --allowed-origin for its own address (the suite sends Host and Origin of
#    the URL it is given and expects 2xx for those, 4xx for evil.example.com).
# 5. cargo build -p sessionreg-rmcp --example rmcp_server (debug; rmcp 3.11
#    with sessionreg's registry as its session manager), start it the same way,
#    and run ts_client.mjs against it too.
# Each server must then exit 0 on SIGTERM and log no ERROR line.
#
# One summary line per step, then "interop: N passed, M failed"; exits 1 if any
# step failed. The servers are killed on exit, whatever happens.
#
# Env: INTEROP_SERVER_CMD replaces the built mcp_server example (e.g. to try the scripts
# against another server with the same flags); INTEROP_KEEP=1 keeps the work
# directory with logs and the suite's checks.json files.
set -euo pipefail

TARGET="${1:-all}"
case "$TARGET" in
  all | mcp_server | rmcp_server) ;;
  *) echo "usage: $0 [all|mcp_server|rmcp_server]" >&2; exit 2 ;;
esac
want() { [[ $TARGET == all || $TARGET == "$1" ]]; }

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
SPEC_VERSION=2025-11-25
# NAME or NAME@SPEC_VERSION (default $SPEC_VERSION). The 2026-07-28 ones
# run against the example's session-less serving; server-stateless is left
# out: its remaining checks need diagnostic tools of a full 2026-07-28
# application (elicitation, capabilities, logging), not of this layer.
SCENARIOS=(
  server-initialize
  server-session-lifecycle
  ping
  tools-list
  server-sse-multiple-streams
  server-sse-polling
  dns-rebinding-protection
  tools-list@2026-07-28
  server-sse-multiple-streams@2026-07-28
  http-header-validation@2026-07-28
  dns-rebinding-protection@2026-07-28
)
STARTUP_TIMEOUT_S=30
STEP_TIMEOUT_S=120

WORK="$(mktemp -d "${TMPDIR:-/tmp}/sessionreg-interop.XXXXXX")"
SERVER_PIDS=()
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
  step_fail npm-ci "npm ci failed in interop/"
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
step_ok npm-ci "node $NODE_VERSION, sdk $(pkg_version @modelcontextprotocol/sdk), conformance $(pkg_version @modelcontextprotocol/conformance) ($((SECONDS - t))s)"

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

# A free loopback port for the instance that has its own address allow-listed.
free_port() {
  "$NODE" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
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

run_scenario() {
  local entry=$1 url=$2 pid=$3 t=$SECONDS
  local scenario=${entry%@*} version=$SPEC_VERSION
  [[ $entry == *@* ]] && version=${entry#*@}
  local dir="$WORK/conformance/$entry"
  mkdir -p "$dir"
  local rc=0
  timeout "$STEP_TIMEOUT_S" "$NODE" "$CONFORMANCE" server \
    --url "$url" --scenario "$scenario" --spec-version "$version" -o "$dir" \
    </dev/null >"$dir/output.log" 2>&1 || rc=$?
  local counts s f w n
  counts="$(summarize_checks "$dir" 2>>"$dir/output.log" || echo "0 0 0 0")"
  read -r s f w n <<<"$counts"
  local label="conformance $entry"
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

MAIN_PID=""
DNS_PID=""
RMCP_PID=""

if want mcp_server; then
  # ---------------------------------------------------------------- 2. server
  if [[ -n "${INTEROP_SERVER_CMD:-}" ]]; then
    read -r -a SERVER_CMD <<<"$INTEROP_SERVER_CMD"
  else
    t=$SECONDS
    if ! (cd "$ROOT" && cargo build --release --example mcp_server) </dev/null >"$WORK/build.log" 2>&1; then
      step_fail build "cargo build --release --example mcp_server failed"
      show_log "$WORK/build.log" 40
      abort
    fi
    SERVER_CMD=("${TARGET_DIR:-$ROOT/target}/release/examples/mcp_server")
    step_ok build "examples/mcp_server ($((SECONDS - t))s)"
  fi

  t=$SECONDS
  START_ERROR=""
  if ! start_server main --addr 127.0.0.1:0; then
    step_fail server-start "$START_ERROR (${SERVER_CMD[*]} --addr 127.0.0.1:0)"
    show_log "$WORK/main.stdout" 20
    show_log "$WORK/main.stderr" 40
    abort
  fi
  MAIN_URL=$SERVER_URL
  MAIN_PID=$SERVER_PID
  step_ok server-start "$MAIN_URL ($((SECONDS - t))s)"


  # ---------------------------------------------------------------- 3. TS SDK client
  run_ts_client ts-client "$MAIN_URL" "$MAIN_PID" main --resumption

  # ---------------------------------------------------------------- 4. conformance
  DNS_URL=""
  DNS_PID=""
  for scenario in "${SCENARIOS[@]}"; do
    if [[ "${scenario%@*}" == dns-rebinding-protection ]]; then
      # The suite sends Host: 127.0.0.1:PORT and Origin: http://127.0.0.1:PORT
      # with the valid request, so that exact origin must be allow-listed.
      if [[ -z "$DNS_URL" ]]; then
        ok=0
        for _attempt in 1 2 3; do
          port="$(free_port)"
          START_ERROR=""
          if start_server dns --addr "127.0.0.1:$port" --allowed-origin "http://127.0.0.1:$port"; then
            ok=1
            break
          fi
          kill "$SERVER_PID" 2>/dev/null || true
        done
        if [[ $ok == 0 ]]; then
          step_fail "conformance $scenario" "could not start the allow-listed instance: $START_ERROR"
          show_log "$WORK/dns.stderr" 20
          continue
        fi
        DNS_URL=$SERVER_URL
        DNS_PID=$SERVER_PID
      fi
      run_scenario "$scenario" "$DNS_URL" "$DNS_PID"
    else
      run_scenario "$scenario" "$MAIN_URL" "$MAIN_PID"
    fi
  done

  if ! kill -0 "$MAIN_PID" 2>/dev/null; then
    step_fail server-alive "the server exited during the run; stderr:"
    show_log "$WORK/main.stderr" 40
  fi
fi

if want rmcp_server; then
  # ---------------------------------------------------------------- 5. rmcp example
  # A debug build: the check is functional, and `cargo test` (which .ci/run
  # runs first) has built it already, where a release build of rmcp would
  # cost minutes.
  t=$SECONDS
  if ! (cd "$ROOT" && cargo build -p sessionreg-rmcp --example rmcp_server) </dev/null >"$WORK/build-rmcp.log" 2>&1; then
    step_fail build-rmcp "cargo build -p sessionreg-rmcp --example rmcp_server failed"
    show_log "$WORK/build-rmcp.log" 40
    abort
  fi
  SERVER_CMD=("${TARGET_DIR:-$ROOT/target}/debug/examples/rmcp_server")
  step_ok build-rmcp "sessionreg-rmcp/examples/rmcp_server ($((SECONDS - t))s)"
  t=$SECONDS
  START_ERROR=""
  if ! start_server rmcp --addr 127.0.0.1:0; then
    step_fail server-start-rmcp "$START_ERROR (${SERVER_CMD[*]} --addr 127.0.0.1:0)"
    show_log "$WORK/rmcp.stdout" 20
    show_log "$WORK/rmcp.stderr" 40
    abort
  fi
  RMCP_URL=$SERVER_URL
  RMCP_PID=$SERVER_PID
  step_ok server-start-rmcp "$RMCP_URL ($((SECONDS - t))s)"
  run_ts_client ts-client-rmcp "$RMCP_URL" "$RMCP_PID" rmcp
  if ! kill -0 "$RMCP_PID" 2>/dev/null; then
    step_fail server-alive-rmcp "the rmcp server exited during the run; stderr:"
    show_log "$WORK/rmcp.stderr" 40
  fi
fi

# SIGTERM must shut each server down gracefully, and a run of well-behaved
# clients must not make a server log an error (shutdown included).
for name in main dns rmcp; do
  [[ -f "$WORK/$name.stderr" ]] || continue
  case $name in
    main) pid=$MAIN_PID ;;
    dns) pid=$DNS_PID ;;
    rmcp) pid=$RMCP_PID ;;
  esac
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
