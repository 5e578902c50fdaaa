#!/usr/bin/env bash
# What one dead server and one cut-off DC cost each protocol on a real cluster (issue
# 53, 3): for every protocol in PROTOCOLS, a us3 cluster (three DCs of two servers, the
# topology's WAN delays emulated) runs `bench --workload WL` with CLIENTS clients for
# DUR; AT seconds in, either node 0 (NY) is killed with SIGKILL for good (`dead`), or
# TX is cut off from both other DCs for CUT seconds by `cluster partition --isolate`
# (`cut`). From the bench's history it prints one row per protocol and fault:
#
#   before   commits/s of the whole cluster in the 5 s before the fault
#   during   commits/s from 2 s after the fault (twice the fail-over time) to the end
#            of the run (dead) or of the cut (cut); for a cut, of NY and CA only (the
#            majority side), and of TX apart
#   stall    the longest time after the fault in which nothing committed anywhere
#   check    the bench's verdict on the history (serializable, atomic, durable, live),
#            keys still locked and transactions unresolved at the end, anomalies
#
#   scripts/fault-table.sh                                   # every protocol, both faults
#   PROTOCOLS="rc hacommit" FAULTS=cut scripts/fault-table.sh
set -uo pipefail
cd "$(dirname "$0")/.."
M=${MERIDIAN:-target/release/meridian}
[ -x "$M" ] || cargo build --release -q -p meridian
read -r -a PROTOCOLS <<<"${PROTOCOLS:-2pc-2pl 2pc-occ rc replog replog:lease=2s hacommit crossstitch pc-2pl pc-occ catenae catenae:majority=on catenae:secondary=on hier-lock 2pc-deferred}"
read -r -a FAULTS <<<"${FAULTS:-dead cut}"
AT=${AT:-8}
CUT=${CUT:-10}
DUR=${DUR:-30s} # in seconds, with the unit: 30s
CLIENTS=${CLIENTS:-6}
WL=${WL:-bank}
WORK=$(mktemp -d /tmp/fault-table.XXXXXX)
trap 'for d in "$WORK"/c-*; do [ -f "$d/cluster.toml" ] && $M cluster down --dir "$d" >/dev/null 2>&1; done; true' EXIT
printf '%-22s %-5s %8s %8s %8s %8s %7s  %s\n' protocol fault before during "NY+CA" TX stall check
run=0
for p in "${PROTOCOLS[@]}"; do
    for fault in "${FAULTS[@]}"; do
        run=$((run + 1))
        d=$WORK/c-$run
        if ! $M cluster up --protocol "$p" --topology us3 --dir "$d" --base-port $((26000 + 20 * run)) >"$d.up" 2>&1; then
            printf '%-22s %-5s cluster up failed: %s\n' "$p" "$fault" "$(tail -1 "$d.up")"
            continue
        fi
        epoch=$(sed -n 's/^epoch_ns *= *\([0-9]*\).*/\1/p' "$d/cluster.toml")
        $M bench --cluster "$d/cluster.toml" --clients "$CLIENTS" --duration "$DUR" --workload "$WL" \
            --settle 5s --json --history "$d/h.jsonl" >"$d/bench.json" 2>"$d/bench.err" &
        b=$!
        sleep "$AT"
        at=$(($(date +%s%N) - epoch))
        if [ "$fault" = dead ]; then
            kill -9 "$(sed -n 1p "$d/pids")"
            until_ns=0
        else
            $M cluster partition --dir "$d" --isolate TX --for "${CUT}s" >/dev/null 2>&1
            until_ns=$((at + CUT * 1000000000))
        fi
        wait "$b"
        $M cluster down --dir "$d" >/dev/null 2>&1
        # The run's end in cluster time: the bench ran DUR from about AT before the fault.
        run_end=$((at + (${DUR%s} - AT) * 1000000000))
        python3 - "$d/h.jsonl" "$d/bench.json" "$p" "$fault" "$at" "$until_ns" "$run_end" <<'EOF'
import json, sys
hist, bench, proto, fault, at, until = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
# The run's end: the bench's duration after its start, or the last transaction to end
# if that is later (a transaction still in flight when nothing else ends counts too).
ends, last = [], int(sys.argv[7])
try:
    for line in open(hist):
        r = json.loads(line)
        if r.get("type") == "txn":
            # The run's end: the last transaction to end, however it ended.
            last = max(last, r.get("end") or 0)
            if r.get("outcome") == "committed":
                ends.append((r["end"], r["dc"]))
except FileNotFoundError:
    pass
ends.sort()
hi = until if until else last
def rate(lo, hi, dcs=None):
    n = sum(1 for t, d in ends if lo <= t < hi and (dcs is None or d in dcs))
    return n / max(1e-9, (hi - lo) / 1e9)
# The longest gap without a commit from the fault to the end of the run (or of the cut).
prev, stall = at, 0
for t, _ in ends:
    if at <= t < hi:
        stall = max(stall, t - prev)
        prev = t
stall = max(stall, hi - prev)
try:
    j = json.load(open(bench))
    c = j["check"]
    bad = [k for k in ("serializable", "atomic", "durable", "live") if c.get(k) is False]
    verdict = ("clean" if not bad else "NOT " + ",".join(bad))
    verdict += f"; locked {j.get('locked_at_end') or 0}, unresolved {j.get('unresolved') or 0}, anomalies {len(c.get('anomalies') or [])}"
except Exception as e:
    verdict = f"no verdict ({e.__class__.__name__})"
during = rate(at + 2_000_000_000, hi)
# Histories name DCs by number, in the topology's order: us3 is NY, CA, TX.
maj = rate(at + 2_000_000_000, hi, {0, 1}) if until else float("nan")
tx = rate(at + 2_000_000_000, hi, {2}) if until else float("nan")
fmt = lambda x: "-" if x != x else f"{x:.1f}"
print(f"{proto:22} {fault:5} {rate(at - 5_000_000_000, at):8.1f} {during:8.1f} {fmt(maj):>8} {fmt(tx):>8} {stall / 1e9:6.2f}s  {verdict}")
EOF
    done
done
