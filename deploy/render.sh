#!/usr/bin/env bash
# Prints a complete load-balancer configuration for a fleet of sessionreg
# MCP nodes, routing every request to the node that holds its state by the
# first two hex digits of the id it carries (a session's, a task's, or a
# handle's), with no state in the balancer; or, from the same node list,
# the Prometheus scrape configuration of the nodes.
#
#   deploy/render.sh KIND LISTEN_PORT ADDR0 [ADDR1 ...] > FILE
#   deploy/render.sh prometheus ADDR0 [ADDR1 ...] > prometheus.yml
#
#   KIND         nginx | haproxy
#   LISTEN_PORT  the balancer listens on 127.0.0.1:LISTEN_PORT
#   ADDRi        host:port of node i, the node started with --node-id i
#                (its ids, of sessions, tasks and handles, begin with i as
#                two hex digits: 00, 01, ... ff)
#
# Run the result as it is:
#
#   nginx   -p DIR -c FILE -g 'daemon off;'   (DIR: a writable directory for
#                                              temp files, pid and access.log)
#   haproxy -f FILE                           (stays in the foreground)
#   prometheus --config.file=prometheus.yml   (or copy its scrape_configs
#                                              entry into your own; each node
#                                              is scraped at ADDRi, labelled
#                                              node="i", as the Grafana
#                                              dashboard deploy/grafana/
#                                              sessionreg-fleet.json reads)
#
# The id a request is routed by (both kinds):
#
#   * its MCP-Session-Id (MCP 2025-11-25 and before), if it has one;
#   * else, for a request of the tasks extension (io.modelcontextprotocol/
#     tasks: Mcp-Method tasks/get, tasks/update, tasks/cancel, anything
#     beginning "tasks/"), its Mcp-Name, which is then the task id (MCP
#     2026-07-28, which has no sessions: "so load balancers can route
#     subsequent requests for the same task to the server instance holding
#     its state"). Any other request's Mcp-Name names a tool, prompt or
#     resource, and is never routed by;
#   * else, for a tools/call, the first of its Mcp-Param-<Name> headers
#     whose Name is listed in MCP_ROUTE_PARAMS (below): a tool argument the
#     tool's input schema declares with "x-mcp-header": "<Name>", which a
#     2026-07-28 client mirrors into that header (SEP-2243), holding a
#     handle's id (SEP-2567) minted by a node with its node id in front, as
#     examples/mcp_server's baskets (MCP_ROUTE_PARAMS=Basket);
#   * else none.
#
# Routing (both kinds):
#
#   * no id (an initialize; a 2026-07-28 request such as server/discover or
#     the tools/call that creates a task): round-robin over the nodes that
#     are up and ready (not draining). A node that refuses an initialize
#     with 503 (draining, full) created nothing, so it is sent to the next.
#     A 2026-07-28 request (it carries Mcp-Method, which a 2025-11-25
#     client never sends) is sent to another node only when it reached none
#     (HAProxy: also after a 503, which the nodes answer before running
#     anything): one in flight when its node dies gets 502, never a second
#     run of its tool elsewhere.
#   * an id beginning with node i's two digits: node i while it is up,
#     draining or not; when it is down, any other live node, which answers
#     404 to a session's request, so the client starts a new session (MCP
#     2025-11-25, "Session Management"), to a task's request the JSON-RPC
#     error "Failed to retrieve task: Task not found" (the task died with
#     its node), and to a call naming a handle what the application says of
#     an unknown one (mcp_server: "no basket ...", a tool error).
#   * an id naming no node (malformed, or a node not in this list): any live
#     node (404, or "Task not found").
#   * SSE (GET streams, POST replies) passes through unbuffered, with one
#     hour of silence allowed (the nodes send a keep-alive comment every 15 s).
#
# A request that carries no id in its headers cannot be routed to its
# owner: a tasks/* request without Mcp-Name (which 2026-07-28 requires), a
# tools/call from a client that did not list the tool first (the Python
# SDK mirrors x-mcp-header arguments only for tools it has listed; the
# node then refuses the call with -32020 HeaderMismatch and the client
# lists and retries), or one whose id header is Base64-encoded
# ("=?base64?...?=": an id is plain hex, so no client needs to): it
# reaches whichever node the round-robin or the fallback picks.
#
# The nodes' paths, if not those of examples/mcp_server (env, optional):
#   MCP_PATH=/mcp  HEALTH_READY=/health/ready  HEALTH_LIVE=/health/live
# MAX_BODY=4m: the largest request body passed on (the nodes' own limit).
# Prometheus only: METRICS_PATH=/metrics, SCRAPE_INTERVAL=15s, JOB=sessionreg.
# MCP_ROUTE_PARAMS="Basket": the x-mcp-header names whose Mcp-Param-<Name>
#   headers carry handle ids to route by, in order of precedence (separated
#   by commas or spaces; letters, digits and "-"; default none).
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

[[ $# -ge 2 ]] || usage
KIND=$1
if [[ $KIND == prometheus ]]; then
  PORT=1
  shift 1
else
  [[ $# -ge 3 ]] || usage
  PORT=$2
  shift 2
fi
ADDRS=("$@")
N=${#ADDRS[@]}
MCP_PATH=${MCP_PATH:-/mcp}
HEALTH_READY=${HEALTH_READY:-/health/ready}
HEALTH_LIVE=${HEALTH_LIVE:-/health/live}
MAX_BODY=${MAX_BODY:-4m}

fail() {
  echo "render.sh: $*" >&2
  exit 2
}
[[ $KIND == nginx || $KIND == haproxy || $KIND == prometheus ]] ||
  fail "KIND must be nginx, haproxy or prometheus, not '$KIND'"
[[ $PORT =~ ^[0-9]{1,5}$ ]] && ((PORT >= 1 && PORT <= 65535)) || fail "bad LISTEN_PORT '$PORT'"
((N <= 256)) || fail "at most 256 nodes (node ids are one byte), got $N"
for addr in "${ADDRS[@]}"; do
  [[ $addr =~ ^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$ ]] || fail "bad node address '$addr' (want host:port)"
done
for path in "$MCP_PATH" "$HEALTH_READY" "$HEALTH_LIVE"; do
  [[ $path =~ ^/[A-Za-z0-9._~/-]*$ ]] || fail "bad path '$path'"
done
[[ $MAX_BODY =~ ^[0-9]+[km]?$ ]] || fail "bad MAX_BODY '$MAX_BODY'"
METRICS_PATH=${METRICS_PATH:-/metrics}
SCRAPE_INTERVAL=${SCRAPE_INTERVAL:-15s}
JOB=${JOB:-sessionreg}
[[ $METRICS_PATH =~ ^/[A-Za-z0-9._~/-]*$ ]] || fail "bad METRICS_PATH '$METRICS_PATH'"
[[ $SCRAPE_INTERVAL =~ ^[0-9]+(ms|s|m|h)$ ]] || fail "bad SCRAPE_INTERVAL '$SCRAPE_INTERVAL'"
[[ $JOB =~ ^[A-Za-z_][A-Za-z0-9_-]*$ ]] || fail "bad JOB '$JOB'"
# The handle parameters, as given (Basket) and as each balancer names their
# header: nginx's variable (http_mcp_param_basket: lowercase, "-" as "_"),
# HAProxy's header name (mcp-param-basket).
PARAMS=()
IFS=', ' read -r -a names <<<"${MCP_ROUTE_PARAMS:-}"
for name in "${names[@]}"; do
  [[ -n $name ]] || continue
  [[ $name =~ ^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$ ]] ||
    fail "bad MCP_ROUTE_PARAMS name '$name' (letters, digits and inner '-' only)"
  for seen in "${PARAMS[@]}"; do
    [[ ${seen,,} != "${name,,}" ]] || fail "MCP_ROUTE_PARAMS names '$name' twice"
  done
  PARAMS+=("$name")
done
P=${#PARAMS[@]}
param_var() {
  local lower=${1,,}
  printf 'http_mcp_param_%s' "${lower//-/_}"
}
param_header() { printf 'mcp-param-%s' "${1,,}"; }

# Shared memory for a pool of N servers in nginx (about 1 KiB each).
ZONE="$((32 + N))k"

# Every node, as a server of an nginx pool: skipped for fail_timeout after
# one failure (a refused connection, or a 503 where it counts).
pool_servers() {
  for ((i = 0; i < N; i++)); do
    printf '        server %s max_fails=1 fail_timeout=10s;\n' "${ADDRS[$i]}"
  done
}

# Node i's id prefix: i as two lowercase hex digits.
hex() { printf '%02x' "$1"; }

# The fleet, as comment lines: node, id prefix, address.
node_list() {
  for ((i = 0; i < N; i++)); do
    printf '#   node %d (ids %s...): %s\n' "$i" "$(hex "$i")" "${ADDRS[$i]}"
  done
}

nginx_conf() {
  cat <<EOF
# nginx configuration for a fleet of $N sessionreg MCP node(s), printed by
# deploy/render.sh nginx $PORT ADDR0 ADDR1 ...
EOF
  node_list
  cat <<EOF
# Run: nginx -p DIR -c FILE -g 'daemon off;'
# Written for nginx 1.22 (Debian 12) and later; open source nginx only.

# One worker per core. Each worker keeps its own connections; the zones of
# the two pools below share their (passive) failure state between workers.
worker_processes auto;
# Errors to stderr (the terminal, or the service manager's journal).
error_log stderr warn;
# Relative paths are under the prefix (-p DIR).
pid nginx.pid;

events {
    # Each open SSE stream holds two connections: client and node.
    worker_connections 4096;
}

http {
    # Temp files under the prefix: the compiled-in paths may not be writable
    # by the user running this. Request bodies are buffered (see below).
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;

    # One line per request, with the node(s) tried and their answers
    # (\$upstream_addr lists every node tried, retries included). Never the
    # session id or the task id: each grants access to what it names.
    log_format mcp '\$remote_addr [\$time_local] "\$request" \$status '
                   'owner=\$mcp_owner upstream=\$upstream_addr '
                   'upstream_status=\$upstream_status \$request_time';
    access_log access.log mcp;

    # The id a request is routed by, in steps (a map is evaluated
    # when its variable is first used in a request: nothing is kept between
    # requests). nginx names the headers \$http_mcp_session_id,
    # \$http_mcp_method and \$http_mcp_name whatever their case.
    # A task request's id: its Mcp-Name, when its Mcp-Method is one of the
    # tasks extension's (tasks/get, tasks/update, tasks/cancel). Any other
    # Mcp-Name (a tools/call's tool name, say) is not an id.
EOF
  if ((P == 0)); then
    cat <<EOF
    map \$http_mcp_method \$mcp_named_id {
        "~^tasks/"  \$http_mcp_name;
        default     "";
    }
EOF
  else
    cat <<EOF
    # A tools/call's id: the handle in the first of its Mcp-Param-<Name>
    # headers named in MCP_ROUTE_PARAMS (${PARAMS[*]}) that it carries.
    map \$http_mcp_method \$mcp_named_id {
        "~^tasks/"    \$http_mcp_name;
        "tools/call"  \$mcp_param_id_0;
        default       "";
    }
EOF
    for ((k = 0; k < P; k++)); do
      next='""'
      ((k + 1 < P)) && next="\$mcp_param_id_$((k + 1))"
      printf '    # Mcp-Param-%s, if the request carries it (not empty).\n' "${PARAMS[$k]}"
      printf '    map $%s $mcp_param_id_%d {\n' "$(param_var "${PARAMS[$k]}")" "$k"
      printf '        ""        %s;\n' "$next"
      printf '        default   $%s;\n' "$(param_var "${PARAMS[$k]}")"
      printf '    }\n'
    done
  fi
  cat <<EOF
    # The session's id if there is one, else the task's or the handle's
    # (empty if none).
    map \$http_mcp_session_id \$mcp_route_id {
        ""        \$mcp_named_id;
        default   \$http_mcp_session_id;
    }
    # Where a request with no id goes: a 2025-11-25 client sends no
    # Mcp-Method, and its request without an id is an initialize (a new
    # session); a 2026-07-28 one sends Mcp-Method on every request.
    map \$http_mcp_method \$mcp_unrouted {
        ""        /.mcp-new-session;
        default   /.mcp-stateless;
    }

    # The owner of a request, from its id's first two hex digits (ids are
    # lowercase hex; a regex map entry matches the id's beginning).
    map \$mcp_route_id \$mcp_owner {
        # No id: not used (the location below sends these to mcp_new).
        ""        "";
EOF
  for ((i = 0; i < N; i++)); do
    printf '        "~^%s"    mcp_node_%s;\n' "$(hex "$i")" "$(hex "$i")"
  done
  cat <<EOF
        # An id naming no node of this fleet: any live node (it answers 404,
        # or "Task not found").
        default   mcp_any;
    }

    # New sessions: round-robin over every node. nginx (open source) has no
    # active health checks, so a draining node leaves this rotation
    # passively: it answers an initialize with 503, which
    # proxy_next_upstream below counts as a failure (max_fails=1) and retries
    # on the next node; the node is then skipped for fail_timeout, after
    # which one initialize tries it again.
    upstream mcp_new {
        # Failure state shared by all workers.
        zone mcp_new $ZONE;
EOF
  pool_servers
  cat <<EOF
        # Idle connections kept open to the nodes, per worker.
        keepalive 16;
    }

    # Ids naming no node: any node will do (each answers 404, or "Task not
    # found").
    upstream mcp_any {
        zone mcp_any $ZONE;
EOF
  pool_servers
  cat <<EOF
        keepalive 16;
    }

    # One group per node. Its owner comes first and is tried for every
    # request (max_fails=0: never marked down, so a passing error does not
    # send its sessions or tasks elsewhere). A draining owner still answers
    # its sessions and tasks here. Only when the owner cannot be reached
    # (the process is gone: connection refused) does the request go to a
    # backup: the other nodes, which answer 404, so the client
    # re-initializes, or "Task not found" (the task died with its node). (No
    # zone: the owner is never marked down, and each worker finding a dead
    # backup on its own costs one refused connection.)
EOF
  for ((i = 0; i < N; i++)); do
    printf '    upstream mcp_node_%s {\n' "$(hex "$i")"
    printf '        server %s max_fails=0;\n' "${ADDRS[$i]}"
    for ((j = 0; j < N; j++)); do
      ((j == i)) || printf '        server %s backup max_fails=1 fail_timeout=10s;\n' "${ADDRS[$j]}"
    done
    printf '        keepalive 16;\n'
    printf '    }\n'
  done
  cat <<EOF

    server {
        # Loopback here; a real deployment listens on its public address,
        # with TLS (listen 443 ssl; ssl_certificate ...).
        listen 127.0.0.1:$PORT;

        # --- Settings for both locations below ---
        # HTTP/1.1 with no "Connection: close", so upstream keepalive works
        # and responses may be chunked (SSE).
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        # The client's own Host: the nodes check it (DNS-rebinding
        # protection, allowed hosts).
        proxy_set_header Host \$http_host;
        proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto \$scheme;
        # SSE: pass every event to the client as soon as it arrives, never
        # wait to fill a buffer, never cache. (With buffering on, nginx 1.22
        # holds a GET stream's headers and events until more data comes.)
        proxy_buffering off;
        proxy_cache off;
        # A node may be silent this long between two events (SSE) or before
        # it answers a long tool call; its keep-alive comments (every 15 s)
        # keep an idle stream well inside it.
        proxy_read_timeout 1h;
        proxy_send_timeout 1h;
        # A node that does not accept a connection in this time is treated
        # as down for this request (see proxy_next_upstream).
        proxy_connect_timeout 5s;
        # Request bodies (JSON-RPC messages) up to the nodes' own limit; they
        # are read whole before a node is picked (proxy_request_buffering
        # on, the default), which is what lets a refused initialize be sent
        # to another node.
        client_max_body_size $MAX_BODY;
        # Chunked responses to the client (SSE streams have no length).
        chunked_transfer_encoding on;

        location = $MCP_PATH {
            # No id, neither a session's nor a task's: a new session, a
            # 2026-07-28 request that needs no node in particular (or a
            # request the node will refuse with 400): the round-robin pool,
            # with the retry rules of each (the locations below). "rewrite
            # ... last" is one of the two things safe to do inside "if" in a
            # location.
            if (\$mcp_route_id = "") {
                rewrite ^ \$mcp_unrouted last;
            }
            # An id: its owner's group (a variable naming an upstream group
            # is looked up among the groups above; no DNS is involved).
            proxy_pass http://\$mcp_owner;
            # Try the next server of the group (the backups, once the owner
            # is unreachable) only when nothing could be sent or read:
            # "error" covers a refused connection; nginx never resends a
            # POST once it was sent (no "non_idempotent"), so a tool call in
            # flight when its node dies gets 502, not a second run. A GET
            # stream cut mid-way is not retried either (its response began).
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries $N;
        }

        location = /.mcp-new-session {
            # Reached only through the rewrite above.
            internal;
            proxy_pass http://mcp_new$MCP_PATH;
            # A node that answers 503 (draining, full, shutting down) has
            # created nothing, so the initialize is safe to send to the next
            # node, although POST is not idempotent (non_idempotent); an
            # "error" here means the node failed before answering, and the
            # session it may have begun died with it; a "timeout" (no
            # connection in 5 s, or no answer in an hour) may leave a session
            # on a stuck node, which its idle timeout ends. 503 also counts as a
            # failure for max_fails (only when listed here), which is what
            # takes a draining node out of the rotation.
            proxy_next_upstream error timeout http_503 non_idempotent;
            proxy_next_upstream_tries $N;
        }

        location = /.mcp-stateless {
            # Reached only through the rewrite above: a 2026-07-28 request
            # with no id (server/discover, a tools/call, the tools/call that
            # creates a task). The same pool, but the session's rule: the
            # next node only when nothing was sent (a refused connection, no
            # connection in 5 s; no "non_idempotent"), as a tool may have
            # run, or be running, on a node that failed after it had the
            # request: a call in flight when its node dies gets 502. A 503
            # (full, overloaded: nothing ran) goes back to the client with
            # its Retry-After, and does not count against the node.
            proxy_pass http://mcp_new$MCP_PATH;
            internal;
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries $N;
        }

        # Nothing else is served through the balancer (metrics and health
        # are scraped from each node directly).
        location / {
            return 404;
        }
    }
}
EOF
}

haproxy_conf() {
  cat <<EOF
# HAProxy configuration for a fleet of $N sessionreg MCP node(s), printed by
# deploy/render.sh haproxy $PORT ADDR0 ADDR1 ...
EOF
  node_list
  cat <<EOF
# Run: haproxy -f FILE   (stays in the foreground)
# Written for HAProxy 2.6 (Debian 12) and later.

global
    # Request log lines and server state changes, to stdout.
    log stdout format raw local0 info
    # No "maxconn": HAProxy derives the most connections it accepts from
    # the file-descriptor limit (ulimit -n) it is started with; raise that
    # for a big fleet (each open SSE stream holds two: client and node).

defaults
    mode http
    log global
    # One line per request: the backend and node that served it, timings,
    # status. The default format logs no request header, so no session id.
    option httplog
    # Tell the nodes who the client is.
    option forwardfor
    # A node that does not accept a connection in this time is treated as
    # failed for this attempt.
    timeout connect 5s
    # Time to receive a request's headers.
    timeout http-request 10s
    # An idle client connection between two requests.
    timeout http-keep-alive 60s
    # Silence allowed from the client and from the node: SSE streams are
    # long; the nodes' keep-alive comments (every 15 s) keep an idle stream
    # well inside it. Also bounds a long tool call.
    timeout client 1h
    timeout server 1h
    # Health checks (below): every second; a node is down after 2 failed
    # checks and up again after 2 good ones. "observe layer4" with
    # "error-limit 1 on-error mark-down" also marks it down at once when
    # real traffic cannot connect to it: the request that finds a node dead
    # is sent to a backup after one retry delay (min("timeout connect", 1s),
    # HAProxy's turn-around before a retry), and the ones after it at once,
    # instead of all waiting until two checks have failed.
    default-server inter 1s fall 2 rise 2 observe layer4 error-limit 1 on-error mark-down
    # After a failed connection, retry, each time on another server (that
    # is how a request for a node just found dead reaches a backup).
    retries 3
    option redispatch 1

frontend mcp
    # Loopback here; a real deployment binds its public address, with TLS
    # (bind :443 ssl crt ...).
    bind 127.0.0.1:$PORT
    # Only the MCP endpoint goes through (metrics and health are scraped
    # from each node directly).
    http-request deny deny_status 404 unless { path $MCP_PATH }
    # The id a request is routed by: its MCP-Session-Id if it has one,
    # else, for a request of the tasks extension (Mcp-Method tasks/get,
    # tasks/update, tasks/cancel), its Mcp-Name: the task id. Any other
    # Mcp-Name (a tools/call's tool name, say) is not an id. (And, with
    # MCP_ROUTE_PARAMS, a tools/call's handle: below.) ACLs are
    # evaluated per request: nothing is kept between requests.
    acl mcp_session req.hdr(mcp-session-id) -m found
    acl mcp_task req.fhdr(mcp-method,1) -m beg tasks/
    acl mcp_named req.fhdr(mcp-name,1) -m found
    # A 2026-07-28 request (a 2025-11-25 client never sends Mcp-Method).
    acl mcp_modern req.hdr(mcp-method) -m found
EOF
  if ((P == 0)); then
    cat <<EOF
    # No id, from a 2026-07-28 client (server/discover, a tools/call, the
    # tools/call that creates a task): the nodes ready for new work, with
    # the retry rules of a request that may run a tool.
    use_backend mcp_stateless if mcp_modern !mcp_session !mcp_task
    use_backend mcp_stateless if mcp_modern !mcp_session !mcp_named
    # No id otherwise (an initialize): the pool of nodes ready for new
    # sessions.
    use_backend mcp_new unless mcp_session || mcp_task mcp_named
EOF
  else
    cat <<EOF
    # A tools/call's id: the handle in the first of its Mcp-Param-<Name>
    # headers named in MCP_ROUTE_PARAMS (${PARAMS[*]}) that it carries.
    acl mcp_call req.fhdr(mcp-method,1) -m str tools/call
EOF
    for ((k = 0; k < P; k++)); do
      printf '    acl mcp_param_%d req.fhdr(%s,1) -m len gt 0\n' "$k" "$(param_header "${PARAMS[$k]}")"
    done
    printf '    # Any of them (ACLs of one name are ORed). Present and not empty, as\n    # nginx reads a header.\n'
    for ((k = 0; k < P; k++)); do
      printf '    acl mcp_handle req.fhdr(%s,1) -m len gt 0\n' "$(param_header "${PARAMS[$k]}")"
    done
    cat <<EOF
    # No id, from a 2026-07-28 client (server/discover, a tools/call naming
    # no handle, the tools/call that creates a task): the nodes ready for
    # new work, with the retry rules of a request that may run a tool. (No
    # id: neither a task request with its Mcp-Name nor a tools/call with a
    # handle; a request is never both.)
    use_backend mcp_stateless if mcp_modern !mcp_session !mcp_task !mcp_call
    use_backend mcp_stateless if mcp_modern !mcp_session !mcp_named !mcp_call
    use_backend mcp_stateless if mcp_modern !mcp_session !mcp_handle !mcp_task
    # No id otherwise (an initialize): the pool of nodes ready for new
    # sessions.
    use_backend mcp_new unless mcp_session || mcp_task mcp_named || mcp_call mcp_handle
EOF
  fi
  cat <<EOF
    # A session id: its owner, by the first two hex digits of the id (the
    # first occurrence of the header, as the node reads it).
EOF
  for ((i = 0; i < N; i++)); do
    printf '    use_backend mcp_node_%s if { req.fhdr(mcp-session-id,1) -m beg %s }\n' "$(hex "$i")" "$(hex "$i")"
  done
  cat <<EOF
    # No session id, a task id: its owner, the same way.
EOF
  for ((i = 0; i < N; i++)); do
    printf '    use_backend mcp_node_%s if !mcp_session mcp_task { req.fhdr(mcp-name,1) -m beg %s }\n' "$(hex "$i")" "$(hex "$i")"
  done
  for ((k = 0; k < P; k++)); do
    # The headers listed before this one are absent (as nginx picks the
    # first present one, even if it names no node).
    before=""
    for ((j = 0; j < k; j++)); do before+=" !mcp_param_$j"; done
    printf '    # No session id, a tools/call naming a handle in Mcp-Param-%s: its owner.\n' "${PARAMS[$k]}"
    for ((i = 0; i < N; i++)); do
      printf '    use_backend mcp_node_%s if !mcp_session mcp_call%s { req.fhdr(%s,1) -m beg %s }\n' \
        "$(hex "$i")" "$before" "$(param_header "${PARAMS[$k]}")" "$(hex "$i")"
    done
  done
  cat <<EOF
    # An id naming no node of this fleet: any live node (it answers 404, or
    # "Task not found").
    default_backend mcp_any

# New sessions: round-robin over the nodes whose readiness check answers 200.
# A draining node answers it 503 and leaves the rotation within "fall"
# checks; until then, its 503 to an initialize (which created nothing) is
# retried on another node: the 503 in retry-on, which also covers full and
# shutting-down nodes. "empty-response" (the node closed without a word) is
# safe for the same reason: a session it may have begun died with it.
backend mcp_new
    balance roundrobin
    option httpchk
    http-check send meth GET uri $HEALTH_READY ver HTTP/1.1 hdr Host localhost
    http-check expect status 200
    retry-on conn-failure empty-response 503
EOF
  for ((i = 0; i < N; i++)); do
    printf '    server n%s %s check\n' "$(hex "$i")" "${ADDRS[$i]}"
  done
  cat <<EOF

# 2026-07-28 requests with no id: the same nodes as mcp_new, following its
# checks ("track"). Retried on another node only when the connection failed
# (nothing was sent) or the node answered 503 (full, overloaded, shutting
# down: refused before anything ran). Not "empty-response": a node that
# closed without a word may have run the tool, or died running it, and a
# second run elsewhere is not the balancer's to decide; the client gets 502
# (or its connection closed, as for a session's request).
backend mcp_stateless
    balance roundrobin
    retry-on conn-failure 503
EOF
  for ((i = 0; i < N; i++)); do
    printf '    server n%s %s track mcp_new/n%s\n' "$(hex "$i")" "${ADDRS[$i]}" "$(hex "$i")"
  done
  cat <<EOF

# Ids naming no node: any live node (404, or "Task not found"). Its servers
# follow the liveness checks of the per-node backends below (no checks of
# their own).
backend mcp_any
    balance roundrobin
EOF
  for ((i = 0; i < N; i++)); do
    printf '    server n%s %s track mcp_node_%s/n%s\n' "$(hex "$i")" "${ADDRS[$i]}" "$(hex "$i")" "$(hex "$i")"
  done
  cat <<EOF

# One backend per node: its owner while its liveness check answers 200
# (draining or not), so its sessions (and tasks) are served to their end;
# when it is down, the others as backups, which answer 404 so the client
# re-initializes, or "Task not found" (the task died with its node). Only the default retry (a connection that failed, so
# nothing was sent): a tool call in flight when its node dies gets 502 (or,
# if HAProxy had sent it on a reused connection, its client connection is
# closed: "http-reuse safe" leaves the retry to the client), never a second
# run elsewhere. A GET stream cut mid-way is not retried.
# The owner is checked here; the backups follow their own node's check
# ("track"), so each node gets two checks a second in all, whatever the
# fleet's size.
EOF
  for ((i = 0; i < N; i++)); do
    printf 'backend mcp_node_%s\n' "$(hex "$i")"
    printf '    option httpchk\n'
    printf '    http-check send meth GET uri %s ver HTTP/1.1 hdr Host localhost\n' "$HEALTH_LIVE"
    printf '    http-check expect status 200\n'
    printf '    # Spread the sessions of a dead owner over all live backups.\n'
    printf '    option allbackups\n'
    printf '    server n%s %s check\n' "$(hex "$i")" "${ADDRS[$i]}"
    for ((j = 0; j < N; j++)); do
      ((j == i)) || printf '    server n%s %s backup track mcp_node_%s/n%s\n' \
        "$(hex "$j")" "${ADDRS[$j]}" "$(hex "$j")" "$(hex "$j")"
    done
    printf '\n'
  done
}

prometheus_conf() {
  cat <<EOF
# Prometheus scrape configuration for a fleet of $N sessionreg MCP node(s),
# printed by deploy/render.sh prometheus ADDR0 ADDR1 ...
EOF
  node_list
  cat <<EOF
# Run: prometheus --config.file=FILE, or copy the job below into the
# scrape_configs of your own. Each node is scraped directly at its own
# address (the balancers pass only the MCP path), with a label node="i" for
# node i: the per-node panels of deploy/grafana/sessionreg-fleet.json group
# by it, and it stays the same when a node is restarted on another port.
# A node started with --metrics-on-admin serves /metrics on its admin
# address instead, which is loopback only: run a Prometheus (or an agent)
# on each node's host then, or keep /metrics on the public listener.

global:
  scrape_interval: $SCRAPE_INTERVAL
  evaluation_interval: $SCRAPE_INTERVAL

scrape_configs:
  - job_name: $JOB
    metrics_path: $METRICS_PATH
    scheme: http
    static_configs:
EOF
  for ((i = 0; i < N; i++)); do
    printf '      - targets: ["%s"]\n' "${ADDRS[$i]}"
    printf '        labels:\n'
    printf '          node: "%d"\n' "$i"
  done
}

case $KIND in
  nginx) nginx_conf ;;
  haproxy) haproxy_conf ;;
  prometheus) prometheus_conf ;;
esac
