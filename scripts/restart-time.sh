#!/usr/bin/env bash
# Restart time of a journalled server after a long benchmark (issue 16): brings up a
# durable local cluster, runs `bench` for SECS seconds, kills node 0 with SIGKILL,
# restarts it with the documented command and times it until `cluster status` shows
# it up. Prints the journal sizes, the time and the node's replay log line.
#
# With BASELINE=/path/to/older/meridian, node 0 is instead restarted ROUNDS times
# (default 5) with each build in turn on the same journal (kill -9 before each), and
# each restart is timed from the process start to its `serving` log line: a
# before/after comparison in one sitting. Each restart adds a few entries. ROUNDS=N
# alone does the same with this build only (for a baseline whose journal format this
# build refuses: run the script once with MERIDIAN=old-binary, once without).
#
# Usage: [BASELINE=old-binary] [ROUNDS=5] scripts/restart-time.sh [--base-port PORT] [PROTOCOL] [SECS]
#        (default: 2pc-2pl 110, ports from 7400 as `cluster up`)
set -euo pipefail
PORT=7400
if [ "${1:-}" = "--base-port" ]; then
    [ -n "${2:-}" ] || { echo "error: --base-port needs a port" >&2; exit 2; }
    PORT=$2
    shift 2
fi
B=${MERIDIAN:-target/release/meridian}
P=${1:-2pc-2pl}
SECS=${2:-110}
D=$(mktemp -d)
trap '$B cluster down --dir "$D" >/dev/null 2>&1 || true; kill -9 "${pid:-}" 2>/dev/null || true; rm -rf "$D"' EXIT
$B cluster up --protocol "$P" --topology us3 --dir "$D" --no-delay --durable --base-port "$PORT" >/dev/null
$B bench --cluster "$D/cluster.toml" --clients 32 --duration "${SECS}s" --settle 1s --json >"$D/bench.json" 2>/dev/null
$B cluster status --dir "$D" --json | python3 -c "import json,sys; v=json.load(sys.stdin); print('journal entries per node', [n['status']['journal_entries'] for n in v])"
cat "$D"/n*.log | python3 -c "
import re, sys
c = [(int(b), int(p) / 1000) for b, p in re.findall(r'checkpointed the journal.*?bytes=(\d+).*?pause_us=(\d+)', sys.stdin.read())]
if c:
    print('checkpoints: %d, image bytes up to %d, event-loop pause ms median %.1f, max %.1f' % (len(c), max(b for b, _ in c), sorted(m for _, m in c)[len(c) // 2], max(m for _, m in c)))
else:
    print('no checkpoints')
"
pid=$(sed -n 1p "$D/pids")
if [ -n "${BASELINE:-}${ROUNDS:-}" ]; then
    for r in $(seq "${ROUNDS:-5}"); do
        for build in ${BASELINE:-} "$B"; do
            kill -9 "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            sleep 0.5
            : >"$D/r.log"
            t0=$(date +%s.%N)
            "$build" server --cluster "$D/cluster.toml" --node 0 >>"$D/r.log" 2>&1 &
            pid=$!
            until grep -q "serving" "$D/r.log"; do
                kill -0 "$pid" 2>/dev/null || { echo "node 0 exited:"; tail -3 "$D/r.log"; exit 1; }
                sleep 0.01
            done
            t1=$(date +%s.%N)
            inputs=$(grep -o 'inputs=[0-9]*' "$D/r.log" | tail -1 || true)
            image=$(grep -o 'restored the checkpoint.*bytes=[0-9]*' "$D/r.log" | grep -o 'bytes=[0-9]*' | tail -1 || true)
            python3 -c "print('round $r $build: %.2f s until serving, $inputs replayed ${image:+after a checkpoint of $image}' % ($t1 - $t0))"
        done
    done
    exit 0
fi
kill -9 "$pid"
sleep 0.5
t0=$(date +%s.%N)
$B server --cluster "$D/cluster.toml" --node 0 >>"$D/n0.log" 2>&1 &
until $B cluster status --dir "$D" --json 2>/dev/null | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)[0]['up'] else 1)" 2>/dev/null; do
    sleep 0.05
done
t1=$(date +%s.%N)
python3 -c "print('restart until node 0 answers status: %.2f s' % ($t1 - $t0))"
grep -E "replayed" "$D/n0.log" | tail -1
