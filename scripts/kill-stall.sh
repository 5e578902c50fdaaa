#!/usr/bin/env bash
# One server killed and not restarted (issue 16): a us3 cluster of PROTO (default
# hacommit) runs `bench --workload WL` (default bank) with CLIENTS clients for DUR
# (default 24s); KILL_AT seconds in (default 8) node NODE (default 0) is killed with
# SIGKILL and stays down. From the bench's history this prints the commits per second
# in the 5 s before the kill, the longest time after the kill in which no transaction
# committed anywhere (the stall), the commits per second from the end of that stall to
# the end of the run and from 2 s after the kill (twice the fail-over time) to the end
# of the run (a stall at the very end makes the first window short), per DC and
# overall, then the bench's verdict on the history.
#
# Usage: [PROTO=hacommit] [NODE=0] [KILL_AT=8] [DUR=24s] [CLIENTS=6] [WL=bank] \
#        [DELAY=1] scripts/kill-stall.sh   (DELAY=0: --no-delay)
set -uo pipefail
M=${MERIDIAN:-target/release/meridian}
D=$(mktemp -d)
trap '$M cluster down --dir "$D" >/dev/null 2>&1; rm -rf "$D"' EXIT
extra=()
[ "${DELAY:-1}" = 0 ] && extra+=(--no-delay)
$M cluster up --protocol "${PROTO:-hacommit}" --topology us3 --dir "$D" "${extra[@]}" >/dev/null || exit 1
epoch=$(sed -n 's/^epoch_ns *= *\([0-9]*\).*/\1/p' "$D/cluster.toml")
$M bench --cluster "$D/cluster.toml" --clients "${CLIENTS:-6}" --duration "${DUR:-24s}" \
  --workload "${WL:-bank}" --settle 5s --json --history "$D/h.jsonl" >"$D/bench.json" 2>"$D/bench.err" &
b=$!
sleep "${KILL_AT:-8}"
pid=$(sed -n "$((${NODE:-0} + 1))p" "$D/pids")
kill -9 "$pid"
killed=$(( $(date +%s%N) - epoch ))
wait "$b"
rc=$?
python3 - "$D/h.jsonl" "$killed" <<'EOF'
import json, sys
path, killed = sys.argv[1], int(sys.argv[2])
ends, dcs = [], {}
for line in open(path):
    r = json.loads(line)
    if r.get("type") == "txn" and r.get("outcome") == "committed":
        ends.append((r["end"], r["dc"]))
ends.sort()
if not ends:
    sys.exit("no commits at all")
last = ends[-1][0]
after = [e for e in ends if e[0] >= killed]
prev, stall, stall_end = killed, 0, killed
for t, _ in after:
    if t - prev > stall:
        stall, stall_end = t - prev, t
    prev = t
def rate(lo, hi, dc=None):
    n = sum(1 for t, d in ends if lo <= t < hi and (dc is None or d == dc))
    return n / max(1e-9, (hi - lo) / 1e9)
print(f"killed at {killed / 1e9:.2f} s (cluster time); longest stall after it: {stall / 1e9:.2f} s (until {stall_end / 1e9:.2f} s)")
print(f"{'':8} {'before':>8} {'after':>8} {'kill+2s':>8}   commits/s: 5 s before the kill, end of the stall to the last commit, 2 s after the kill to the last commit")
for dc in sorted({d for _, d in ends}) + [None]:
    name = "all" if dc is None else f"dc {dc}"
    print(f"{name:8} {rate(killed - 5_000_000_000, killed, dc):8.1f} {rate(stall_end, last, dc):8.1f} {rate(killed + 2_000_000_000, last, dc):8.1f}")
EOF
echo "bench exit $rc (0: the history checked clean)"
tail -3 "$D/bench.err" | grep -v '^bench '
