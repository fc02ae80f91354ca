#!/usr/bin/env bash
# Server instructions (callgrind Ir) and heap allocations per request of
# examples/mcp_server at an earlier commit BEFORE (default fa87d08, the HTTP
# layer before issue 25's re-lay) and at this tree, the same clients against
# both, so that only the server differs (benches/relay_callgrind.py; the
# shapes and the arithmetic are described there). BEFORE is built from a
# clean `git archive` in a target directory of its own.
#
#   benches/relay_callgrind.sh [BEFORE] [--runs R] [--shapes modern,legacy session,...]
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:-fa87d08}
[ $# -gt 0 ] && shift
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
src="$target/relay-before-src"
rm -rf "$src" && mkdir -p "$src"
# -m: the files get the time of extraction, so that cargo rebuilds what
# an earlier BEFORE left in the same target directory.
git archive "$before" | tar -x -m -C "$src"
(cd "$src" && CARGO_TARGET_DIR="$target/relay-before" cargo build --release --example mcp_server)
cargo build --release --example mcp_server
e2e=$(cargo bench --bench e2e --no-run --message-format json 2>/dev/null | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("executable") and "bench" in m["target"]["kind"]: print(m["executable"])' | tail -1)
echo "before: $(git rev-parse --short "$before"); after: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src examples || echo ' plus uncommitted edits'); $(valgrind --version)" >&2
python3 benches/relay_callgrind.py --before "$target/relay-before/release/examples/mcp_server" \
    --after "$target/release/examples/mcp_server" --e2e "$e2e" "$@"
