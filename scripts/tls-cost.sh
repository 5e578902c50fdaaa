#!/usr/bin/env bash
# What mutual TLS costs (issue 55): `meridian bench` on a loopback cluster of one shard
# with three replicas (one server per DC, 0.1 ms apart, --no-delay), with TLS (the
# default) and with --insecure, back to back in each round so that each pair sees the
# same machine. Prints, per protocol and client count, the median txn/s, p50 and p99
# of each and the median of the per-round ratios TLS / insecure.
#
#   scripts/tls-cost.sh                      # hacommit and replog, 4 and 16 clients, 3 rounds of 10 s
#   ROUNDS=5 DURATION=20 PROTOCOLS="rc" CLIENTS="4 16 64" scripts/tls-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
read -r -a PROTOCOLS <<<"${PROTOCOLS:-hacommit replog}"
read -r -a CLIENTS <<<"${CLIENTS:-4 16}"
WORKLOAD=${WORKLOAD:-ycsb:ops=4,reads=0.5,keys=100000}
cargo build --release -q -p meridian
M=$PWD/target/release/meridian
WORK=$(mktemp -d /tmp/tls-cost.XXXXXX)
OUT=$WORK/results.jsonl
echo "results: $OUT" >&2
trap 'for d in "$WORK"/m-*; do [ -f "$d/pids" ] && "$M" cluster down --dir "$d" >/dev/null 2>&1; done; true' EXIT
run=0
for round in $(seq "$ROUNDS"); do
    for p in "${PROTOCOLS[@]}"; do
        for c in "${CLIENTS[@]}"; do
            # Alternate which goes first, so neither always runs on a warmer machine.
            modes=(tls insecure)
            [ $((round % 2)) -eq 0 ] && modes=(insecure tls)
            for mode in "${modes[@]}"; do
                run=$((run + 1))
                d=$WORK/m-$run
                flag=""
                [ "$mode" = insecure ] && flag="--insecure"
                "$M" cluster up --protocol "$p" --topology scripts/one3.toml --dir "$d" --no-delay $flag \
                    --base-port $((25000 + 10 * (run % 200))) >/dev/null 2>&1
                r=$("$M" bench --cluster "$d/cluster.toml" --workload "$WORKLOAD" --clients "$c" \
                    --duration "${DURATION}s" --settle 1s --json 2>/dev/null)
                "$M" cluster down --dir "$d" >/dev/null
                echo "{\"protocol\":\"$p\",\"mode\":\"$mode\",\"clients\":$c,\"round\":$round,\"r\":$r}" >>"$OUT"
                echo "round $round: $p $c clients $mode done" >&2
            done
        done
    done
done
python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
fig = lambda r: (r["throughput_tps"], r["latency_ms"]["p50"], r["latency_ms"]["p99"])
by = {}
for row in rows:
    by.setdefault((row["protocol"], row["clients"]), {}).setdefault(row["mode"], {})[row["round"]] = fig(row["r"])
med = statistics.median
print(f"{'protocol':>9} {'clients':>7} {'txn/s tls':>10} {'insecure':>9} {'ratio':>6} {'[min-max]':>12} {'p50 tls':>8} {'insecure':>8} {'p99 tls':>8} {'insecure':>8}")
for (p, c), m in sorted(by.items()):
    t, i = m.get("tls", {}), m.get("insecure", {})
    rounds = sorted(set(t) & set(i))
    ratios = [t[r][0] / i[r][0] for r in rounds if i[r][0] > 0]
    if not ratios:
        continue
    mt = [med([t[r][k] for r in rounds]) for k in range(3)]
    mi = [med([i[r][k] for r in rounds]) for k in range(3)]
    print(f"{p:>9} {c:>7} {mt[0]:>10.0f} {mi[0]:>9.0f} {med(ratios):>6.2f} {min(ratios):>5.2f}-{max(ratios):<5.2f} "
          f"{mt[1]:>8.2f} {mi[1]:>8.2f} {mt[2]:>8.2f} {mi[2]:>8.2f}")
PY
