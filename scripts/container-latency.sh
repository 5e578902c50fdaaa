#!/usr/bin/env bash
# Commit latency in containers against the simulator (issue 60): for every protocol in
# PROTOCOLS and topology in TOPOLOGIES, a compose cluster (WAN delay emulated in the
# servers: this machine's kernel has no netem) runs a DUR bench of CLIENTS clients on
# WL with no fault, and `meridian sim` runs the same protocol, topology, workload and
# clients. One markdown row each: p50 and p99 commit latency (ms) of both, and the
# ratio of the p50s.
#
#   scripts/container-latency.sh
#   PROTOCOLS="rc" TOPOLOGIES="rc5" scripts/container-latency.sh
# Needs Docker and Compose.
set -uo pipefail
cd "$(dirname "$0")/.."
M=${MERIDIAN:-target/release/meridian}
[ -x "$M" ] || cargo build --release -q -p meridian
read -r -a PROTOCOLS <<<"${PROTOCOLS:-rc hacommit crossstitch}"
read -r -a TOPOLOGIES <<<"${TOPOLOGIES:-us3 rc5}"
DUR=${DUR:-20}
CLIENTS=${CLIENTS:-6}
WL=${WL:-ycsb}
WORK=$(mktemp -d /tmp/container-latency.XXXXXX)
COMPOSE=(docker-compose)
docker-compose version >/dev/null 2>&1 || COMPOSE=(docker compose)
bash scripts/docker-image.sh --binary "$M" --tag meridian:latency >&2 || exit 1
echo "| protocol | topology | containers p50 / p99 (ms) | simulator p50 / p99 (ms) | p50 ratio |"
echo "|---|---|---|---|---|"
i=0
for t in "${TOPOLOGIES[@]}"; do
    for p in "${PROTOCOLS[@]}"; do
        i=$((i + 1))
        d="$WORK/c$i"
        "$M" cluster compose --protocol "$p" --topology "$t" --dir "$d" --image meridian:latency \
            --subnet "10.236.$((i % 250)).0/24" >/dev/null || exit 1
        c=("${COMPOSE[@]}" -p "latency-$i" -f "$d/compose.yml")
        "${c[@]}" up -d >/dev/null 2>&1
        "${c[@]}" run --rm -T meridian cluster status --cluster cluster.toml --wait 120s >/dev/null 2>&1
        "${c[@]}" run --rm -T meridian bench --cluster cluster.toml --workload "$WL" --clients "$CLIENTS" \
            --duration "${DUR}s" --json 2>/dev/null | tail -1 >"$d.json"
        "${c[@]}" down -t 5 >/dev/null 2>&1
        "$M" sim --protocol "$p" --topology "$t" --workload "$WL" --clients "$CLIENTS" --txns 1000000 \
            --max-time "${DUR}s" --json >"$d.sim.json" 2>/dev/null
        python3 - "$p" "$t" "$d.json" "$d.sim.json" <<'PY'
import json, sys
p, t, cj, sj = sys.argv[1:]
try:
    c, s = json.load(open(cj)), json.load(open(sj))
    cl, sl = c["commit_latency_ms"], s["commit_latency_ms"]
    print(f"| {p} | {t} | {cl['p50']:.1f} / {cl['p99']:.1f} | {sl['p50']:.1f} / {sl['p99']:.1f} | {cl['p50'] / sl['p50']:.2f} |")
except Exception as e:
    print(f"| {p} | {t} | (no figure: {e}) | | |")
PY
    done
done
rm -rf "$WORK"
docker rmi -f meridian:latency >/dev/null 2>&1
