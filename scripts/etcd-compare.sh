#!/usr/bin/env bash
# etcd 3 against Meridian on this machine, side by side (issue 22).
#
#   scripts/etcd-compare.sh                 # clients 4 and 16, 2 rounds of 10 s each
#   ROUNDS=3 DURATION=20 scripts/etcd-compare.sh 4 16 64
#
# Every system runs as three processes on loopback (no added delay) holding one copy
# each of all the data, and serves the same closed-loop transactions: 4 distinct keys
# out of 10,000, the first two read, the last two read and written (YCSB-T style
# read-modify-write). Runs alternate (etcd, replog, hacommit, rc, then again) so a
# drift in the machine's speed hits every system alike; the table gives each
# system's median over the rounds and its ratio to etcd.
#
# What each row guarantees:
# - etcd 3.4 (Debian's etcd-server): Raft log fsynced before a write is acknowledged;
#   linearizable reads; each transaction reads its keys, then commits with a compare
#   of every key's mod_revision (optimistic, serializable). Driven by
#   scripts/etcd_bench.py, a Python client (standard library) over etcd's JSON gateway:
#   its client-side cost is higher than Meridian's Rust client.
# - Meridian `--durable`: every server journals its inputs and fsyncs the journal
#   before a batch's messages leave when the protocol forces a write (docs/CLUSTER.md,
#   "what survives"): replog and rc force their log records (strict serializable);
#   hacommit is logless by design and forces nothing (serializable; a power loss may
#   lose what a lone replica held, its group re-syncs it).
# Server CPU per committed transaction is user plus system time of the three server
# processes from /proc/PID/stat over the run (USER_HZ = 100).
#
# Meridian's clusters run mutual TLS (the default since stop 65) while etcd is driven
# over plain HTTP; UP_FLAGS=--insecure makes Meridian's plaintext too, for like
# against like (a BASELINE binary older than stop 65 does not know the flag: leave
# UP_FLAGS empty then, as it has no TLS anyway).
#
# BASELINE=/path/to/an/older/meridian adds that binary's runs of the same protocols
# right after this build's (rows `replog@base`, ...) and a second table of this build
# against it: the before/after of a change, in the same sitting as the etcd rows.
#
# DURABLE=0 runs Meridian without `--durable` (no journal, no fsync); ETCD=0 leaves
# etcd out (with BASELINE: a before/after of Meridian alone).
#
# SAVE=FILE keeps the raw results (one JSON object per run: the bench's own `--json`
# report, or etcd_bench.py's) in FILE, so a later run can be set beside them.
#
# Installing etcd is this script's job: it runs `apt-get install -y etcd-server` when
# `etcd` is missing (as root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=("${@:-4 16}")
[ $# -eq 0 ] && CLIENTS=(4 16)
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-10}
WORKLOAD="ycsb:ops=4,reads=0.5,keys=10000"
PROTOCOLS=(replog hacommit rc)
BASELINE=${BASELINE:-}
DURABLE_FLAG=--durable
[ "${DURABLE:-1}" = 0 ] && DURABLE_FLAG=
ETCD=${ETCD:-1}
if [ -n "$BASELINE" ] && [ ! -x "$BASELINE" ]; then
    echo "BASELINE=$BASELINE is not an executable meridian binary" >&2
    exit 2
fi

if [ "$ETCD" != 0 ] && ! command -v etcd >/dev/null; then
    echo "etcd not found: installing Debian's etcd-server" >&2
    if [ "$(id -u)" -eq 0 ]; then apt-get install -y etcd-server >&2; else sudo apt-get install -y etcd-server >&2; fi
fi
cargo build --release -q -p meridian
M=$PWD/target/release/meridian
WORK=$(mktemp -d /tmp/etcd-compare.XXXXXX)
OUT=$WORK/results.jsonl
echo "results: $OUT" >&2


ETCD_PIDS=()
etcd_down() {
    for p in "${ETCD_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${ETCD_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    ETCD_PIDS=()
}
trap 'etcd_down; for d in "$WORK"/m-*; do [ -f "$d/pids" ] && "$M" cluster down --dir "$d" >/dev/null 2>&1; done; true' EXIT

etcd_up() {
    local dir=$1 cl="e0=http://127.0.0.1:23800,e1=http://127.0.0.1:23801,e2=http://127.0.0.1:23802"
    for port in 23790 23791 23792 23800 23801 23802; do
        if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
            echo "port $port is in use (another etcd?): stop it first" >&2
            return 1
        fi
    done
    for i in 0 1 2; do
        etcd --name e$i --data-dir "$dir/e$i" \
            --listen-peer-urls http://127.0.0.1:2380$i --initial-advertise-peer-urls http://127.0.0.1:2380$i \
            --listen-client-urls http://127.0.0.1:2379$i --advertise-client-urls http://127.0.0.1:2379$i \
            --initial-cluster "$cl" --initial-cluster-state new --initial-cluster-token "$(basename "$dir")" \
            --log-level error >"$dir-e$i.log" 2>&1 &
        ETCD_PIDS+=($!)
    done
    for _ in $(seq 100); do
        curl -sf http://127.0.0.1:23790/health | grep -q '"health":"true"' && return 0
        sleep 0.2
    done
    echo "etcd did not become healthy; logs in $dir-e*.log" >&2
    return 1
}

run=0
for round in $(seq "$ROUNDS"); do
    for c in "${CLIENTS[@]}"; do
        run=$((run + 1))
        if [ "$ETCD" != 0 ]; then
            d=$WORK/etcd-$run
            etcd_up "$d"
            r=$(python3 scripts/etcd_bench.py --endpoints 127.0.0.1:23790,127.0.0.1:23791,127.0.0.1:23792 \
                --clients "$c" --duration "$DURATION" --pids "$(IFS=,; echo "${ETCD_PIDS[*]}")")
            etcd_down
            echo "{\"system\":\"etcd\",\"clients\":$c,\"round\":$round,\"r\":$r}" >>"$OUT"
            echo "round $round, $c clients: etcd $r" >&2
        fi
        for p in "${PROTOCOLS[@]}"; do
            bins=("$p=$M")
            [ -n "$BASELINE" ] && bins+=("$p@base=$BASELINE")
            for sb in "${bins[@]}"; do
                sys=${sb%%=*} bin=${sb#*=}
                d=$WORK/m-$sys-$run
                "$bin" cluster up --protocol "$p" --topology scripts/one3.toml --dir "$d" --no-delay $DURABLE_FLAG ${UP_FLAGS:-} \
                    --base-port $((24000 + 10 * run)) >/dev/null
                r=$("$bin" bench --cluster "$d/cluster.toml" --workload "$WORKLOAD" --clients "$c" \
                    --duration "${DURATION}s" --settle 1s --json 2>/dev/null)
                "$bin" cluster down --dir "$d" >/dev/null
                echo "{\"system\":\"$sys\",\"clients\":$c,\"round\":$round,\"r\":$r}" >>"$OUT"
                echo "round $round, $c clients: $sys done" >&2
            done
        done
    done
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def fig(row):
    r = row["r"]
    if row["system"] == "etcd":
        return r["tps"], r["p50_ms"], r["p99_ms"], r["server_cpu_ms_per_committed"]
    st = r.get("protocol_stats", {})
    return r["throughput_tps"], r["latency_ms"]["p50"], r["latency_ms"]["p99"], st.get("server_cpu_ms_per_committed")
by = {}
for row in rows:
    by.setdefault((row["clients"], row["system"]), []).append(fig(row))
med = lambda xs: statistics.median([x for x in xs if x is not None]) if any(x is not None for x in xs) else float("nan")
print(f"{'clients':>7} {'system':>9} {'txn/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CPU ms/txn':>11} {'txn/s vs etcd':>14} {'p50 vs etcd':>12} {'CPU vs etcd':>12}")
for c in sorted({k[0] for k in by}):
    e = [med([f[i] for f in by[(c, "etcd")]]) for i in range(4)] if (c, "etcd") in by else [float("nan")] * 4
    for s in ["etcd", "replog", "replog@base", "hacommit", "hacommit@base", "rc", "rc@base"]:
        if (c, s) not in by:
            continue
        m = [med([f[i] for f in by[(c, s)]]) for i in range(4)]
        vs = [f"{m[i]/e[i]:.2f}" if e[i] == e[i] else "-" for i in (0, 1, 3)]
        print(f"{c:>7} {s:>13} {m[0]:>9.0f} {m[1]:>8.2f} {m[2]:>8.2f} {m[3]:>11.3f} {vs[0]:>14} {vs[1]:>12} {vs[2]:>12}")
if any(k[1].endswith("@base") for k in by):
    print()
    print("this build against BASELINE (medians; a ratio below 1 is lower in this build)")
    print(f"{'clients':>7} {'system':>9} {'txn/s':>16} {'p50 ms':>16} {'p99 ms':>16} {'CPU ms/txn':>18}")
    for c in sorted({k[0] for k in by}):
        for s in ["replog", "hacommit", "rc"]:
            if (c, s) not in by or (c, s + "@base") not in by:
                continue
            a = [med([f[i] for f in by[(c, s)]]) for i in range(4)]
            b = [med([f[i] for f in by[(c, s + "@base")]]) for i in range(4)]
            cells = [f"{y:.4g}->{x:.4g} {x/y:.2f}x" for x, y in zip(a, b)]
            print(f"{c:>7} {s:>9} " + " ".join(f"{x:>16}" for x in cells))
PY
[ -n "${SAVE:-}" ] && cp "$OUT" "$SAVE" && echo "results kept in $SAVE" >&2
true
