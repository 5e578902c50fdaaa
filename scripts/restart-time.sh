#!/usr/bin/env bash
# Restart time of a journalled server after a long benchmark (issue 16): brings up a
# durable local cluster, runs `bench` for SECS seconds, kills node 0 with SIGKILL,
# restarts it with the documented command and times it until `cluster status` shows
# it up. Prints the journal sizes, the time and the node's replay log line.
# Usage: scripts/restart-time.sh [PROTOCOL] [SECS]   (default: 2pc-2pl 110)
set -euo pipefail
B=${MERIDIAN:-target/release/meridian}
P=${1:-2pc-2pl}
SECS=${2:-110}
D=$(mktemp -d)
trap '$B cluster down --dir "$D" >/dev/null 2>&1 || true; kill %1 2>/dev/null || true; rm -rf "$D"' EXIT
$B cluster up --protocol "$P" --topology us3 --dir "$D" --no-delay --durable >/dev/null
$B bench --cluster "$D/cluster.toml" --clients 32 --duration "${SECS}s" --settle 1s --json >"$D/bench.json" 2>/dev/null
$B cluster status --dir "$D" --json | python3 -c "import json,sys; v=json.load(sys.stdin); print('journal entries per node', [n['status']['journal_entries'] for n in v])"
kill -9 "$(sed -n 1p "$D/pids")"
sleep 0.5
t0=$(date +%s.%N)
$B server --cluster "$D/cluster.toml" --node 0 >>"$D/n0.log" 2>&1 &
until $B cluster status --dir "$D" --json 2>/dev/null | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)[0]['up'] else 1)" 2>/dev/null; do
    sleep 0.05
done
t1=$(date +%s.%N)
python3 -c "print('restart until node 0 answers status: %.2f s' % ($t1 - $t0))"
grep -E "replayed" "$D/n0.log" | tail -1
