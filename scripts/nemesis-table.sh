#!/usr/bin/env bash
# Real faults in containers against the same faults in the simulator (issue 60): for
# every protocol in PROTOCOLS, `meridian cluster compose` writes a us3 cluster (three
# DCs of two servers, WAN delays emulated in the nodes, journals on), and `meridian
# cluster nemesis` runs a DUR bench of CLIENTS clients on WL against it while this
# schedule strikes:
#
#   partition:dc=TX,at=5s,for=8s        nftables drops every packet between TX's servers
#                                       and the others (clients reach every server)
#   pause:node=4,at=16s,for=5s          docker pause, then unpause
#   kill:node=2,at=24s,for=6s           docker kill --signal KILL, then docker start
#   slow:a=NY,b=CA,loss=20,at=33s,for=5s   20% of the packets between NY and CA lost
#
# The protocols whose servers forget on a crash in the simulator (hacommit,
# hacommit-rc, crossstitch: `FaultModel::Forgetful`) run memory-only in containers
# too (`cluster compose --memory-only`), so a killed server re-syncs from its peers in
# both; the others journal (their simulated crash keeps the synced log).
#
# Then `meridian sim` runs the same protocol, topology, workload and clients with the
# faults the simulator has for these: `partition:...,clients=no` (TX from NY and from
# CA), `pause:node=4`, `crash:node=2` (no per-link loss: that row has no sim figure).
# One markdown row per protocol and fault:
#
#   before   commits/s of the whole cluster before the first fault
#   during   commits/s while the fault lasts, and the ratio to before
#   gap      the longest time within the fault in which nothing committed anywhere
#   check    the history's verdict (anomalies, durable) for the whole run
#
#   scripts/nemesis-table.sh                       # hacommit rc crossstitch
#   PROTOCOLS="replog:lease=2s catenae:majority=on" scripts/nemesis-table.sh
# Needs root and Docker (the nemesis's own requirements).
set -uo pipefail
cd "$(dirname "$0")/.."
M=${MERIDIAN:-target/release/meridian}
[ -x "$M" ] || cargo build --release -q -p meridian
read -r -a PROTOCOLS <<<"${PROTOCOLS:-hacommit rc crossstitch}"
DUR=${DUR:-45}
CLIENTS=${CLIENTS:-6}
WL=${WL:-bank}
SCHED='partition:dc=TX,at=5s,for=8s;pause:node=4,at=16s,for=5s;kill:node=2,at=24s,for=6s;slow:a=NY,b=CA,loss=20,at=33s,for=5s'
SIMF='partition:a=TX,b=NY,at=5s,for=8s,clients=no;partition:a=TX,b=CA,at=5s,for=8s,clients=no;pause:node=4,at=16s,for=5s;crash:node=2,at=24s,for=6s'
WORK=$(mktemp -d /tmp/nemesis-table.XXXXXX)
bash scripts/docker-image.sh --binary "$M" --tag meridian:nemesis-table >&2 || exit 1
echo "| protocol | fault | containers: before → during (ratio), gap | simulator: before → during (ratio), gap |"
echo "|---|---|---|---|"
i=0
for p in "${PROTOCOLS[@]}"; do
    i=$((i + 1))
    d="$WORK/c$i"
    case "$p" in hacommit | hacommit:* | hacommit-rc* | crossstitch*) mem=--memory-only ;; *) mem= ;; esac
    "$M" cluster compose --protocol "$p" --topology us3 --dir "$d" --image meridian:nemesis-table \
        --subnet "10.233.$((i % 250)).0/24" $mem >/dev/null || exit 1
    "$M" cluster nemesis --dir "$d" --duration "${DUR}s" --workload "$WL" --clients "$CLIENTS" \
        --schedule "$SCHED" --json 2>"$d.err" | tail -1 >"$d.json"
    "$M" sim --protocol "$p" --topology us3 --workload "$WL" --clients "$CLIENTS" --txns 1000000 \
        --max-time "${DUR}s" --faults "$SIMF" --json --history "$d.sim.jsonl" >"$d.sim.json" 2>/dev/null
    python3 - "$p" "$d.json" "$d.sim.json" "$d.sim.jsonl" "$mem" <<'PY'
import json, sys
p, cj, sj, sh, mem = sys.argv[1:]
try:
    c = json.load(open(cj))
except Exception as e:
    print(f"| {p} | (the nemesis gave no report: {e}; see {cj[:-5]}.err) | | |")
    sys.exit(0)
s = json.load(open(sj))
ends = sorted(r["end"] for r in map(json.loads, open(sh))
              if r.get("type") == "txn" and r["outcome"] == "committed" and r.get("end") is not None)
def rate(a, b):
    return sum(1 for e in ends if a <= e < b) / ((b - a) / 1e9)
def gap(a, b):
    last, g = a, 0
    for e in ends:
        if a <= e < b:
            g, last = max(g, e - last), e
    return max(g, b - last) / 1e9
# The simulator's windows, in the nemesis's step order (no sim figure for the lossy link).
sim_windows = [(5e9, 13e9), (16e9, 21e9), (24e9, 30e9), None]
sb = rate(0, 5e9)
cr = c.get("rates") or {}
cb = cr.get("before", 0)
b = c.get("bench") or {}
chk = b.get("check") or {}
verdict = f"{len(chk.get('anomalies', []))} anomalies, durable {chk.get('durable')}"
for k, st in enumerate(cr.get("steps", [])):
    cell = f"{cb:.1f} → {st['during']:.1f} ({st['ratio']:.2f}), {st['longest_gap_s']:.1f} s"
    w = sim_windows[k] if k < len(sim_windows) else None
    if w:
        d = rate(*w)
        scell = f"{sb:.1f} → {d:.1f} ({d / sb if sb else 0:.2f}), {gap(*w):.1f} s"
    else:
        scell = "—"
    print(f"| {p}{' (memory-only)' if mem else ''} | {st['step'].split(',at=')[0]} | {cell} | {scell} |")
sc = s.get("check", {})
print(f"| {p} | (whole run) | {b.get('committed')} committed, {verdict}, exit {c.get('bench_exit')} | "
      f"{s.get('committed')} committed, serializable {sc.get('serializable')}, durable {sc.get('durable')} |")
PY
done
rm -rf "$WORK"
docker rmi -f meridian:nemesis-table >/dev/null 2>&1
