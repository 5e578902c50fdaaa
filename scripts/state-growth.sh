#!/usr/bin/env bash
# Does a server's state stay bounded under a long run? (issue 53, 2.) For every
# protocol in PROTOCOLS, a us3 cluster (6 servers, --durable, checkpoints every CKPT
# inputs, no WAN delay, no TLS) runs `bench --workload WL` with CLIENTS clients for
# DUR seconds; every EVERY seconds the script samples each server's resident memory
# (VmRSS from /proc) and the size of the data directories (du). At the end it prints:
#
#   a curve, one row per sample: seconds, RSS of the largest server and of all six
#   (MB), data directories (MB)
#   the checkpoints every server logged (`checkpointed the journal ... pause_us=`): how many,
#   the image size first and last (MB), the event loop's pause p50 / p99 / max (ms: the
#   copy of the server state) and how long the background thread took to encode and write
#   the versions the servers held at the end (from the bench's history): the most on
#   one server, over how many keys
#
#   scripts/state-growth.sh                                   # 10 minutes each, four protocols
#   PROTOCOLS=replog DUR=150 scripts/state-growth.sh          # the issue's replog repro
#
# Servers collect superseded versions after `version_ttl` (5 s by default; VTTL sets
# it, e.g. VTTL=off for the run before version GC) in the protocols that collect
# (docs/CLUSTER.md, "Version GC"); docs/MEASUREMENTS.md has the curves.
set -uo pipefail
cd "$(dirname "$0")/.."
M=${MERIDIAN:-target/release/meridian}
[ -x "$M" ] || cargo build --release -q -p meridian
read -r -a PROTOCOLS <<<"${PROTOCOLS:-hacommit replog crossstitch rc}"
DUR=${DUR:-600}
EVERY=${EVERY:-30}
CLIENTS=${CLIENTS:-16}
CKPT=${CKPT:-20000}
WL=${WL:-ycsb:ops=4,reads=0.5,keys=1500}
VTTL=${VTTL:-5s}
WORK=$(mktemp -d /tmp/state-growth.XXXXXX)
trap 'for d in "$WORK"/c-*; do [ -f "$d/cluster.toml" ] && $M cluster down --dir "$d" >/dev/null 2>&1; done; true' EXIT
run=0
for p in "${PROTOCOLS[@]}"; do
    run=$((run + 1))
    d=$WORK/c-$run
    if ! $M cluster up --protocol "$p" --topology us3 --dir "$d" --base-port $((27000 + 20 * run)) \
        --durable --checkpoint-every "$CKPT" --no-delay --insecure --version-ttl "$VTTL" >"$d.up" 2>&1; then
        echo "$p: cluster up failed: $(tail -1 "$d.up")"
        continue
    fi
    mapfile -t pids <"$d/pids"
    $M bench --cluster "$d/cluster.toml" --clients "$CLIENTS" --duration "${DUR}s" --workload "$WL" \
        --settle 2s --json --history "$d/h.jsonl" >"$d/bench.json" 2>"$d/bench.err" &
    b=$!
    echo "== $p: bench --workload $WL --clients $CLIENTS --duration ${DUR}s, checkpoint every $CKPT inputs"
    printf '%8s %12s %12s %10s\n' seconds max_rss_mb all_rss_mb data_mb
    start=$(date +%s)
    while kill -0 "$b" 2>/dev/null; do
        now=$(($(date +%s) - start))
        max=0
        all=0
        for pid in "${pids[@]}"; do
            kb=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
            kb=${kb:-0}
            all=$((all + kb))
            [ "$kb" -gt "$max" ] && max=$kb
        done
        data=$(du -sb "$d/data" 2>/dev/null | cut -f1)
        printf '%8d %12.1f %12.1f %10.1f\n' "$now" "$(echo "$max/1024" | bc -l)" "$(echo "$all/1024" | bc -l)" \
            "$(echo "${data:-0}/1048576" | bc -l)"
        for _ in $(seq "$EVERY"); do
            kill -0 "$b" 2>/dev/null || break
            sleep 1
        done
    done
    wait "$b"
    $M cluster down --dir "$d" >/dev/null 2>&1
    python3 - "$d" <<'EOF'
import glob, json, re, sys
d = sys.argv[1]
pauses, sizes, behind, flushes, between = [], [], [], [], []
for log in sorted(glob.glob(f"{d}/n*.log")):
    for line in open(log, errors="replace"):
        if "checkpointed the journal" in line:
            m = re.search(r"bytes=(\d+).* pause_us=(\d+) flush_max_us=(\d+) flush_max_between_us=(\d+) "
                          r"encode_ms=(\d+) write_ms=(\d+)", line)
            if m:
                sizes.append(int(m.group(1)))
                pauses.append(int(m.group(2)) / 1000)
                flushes.append(int(m.group(3)) / 1000)
                between.append(int(m.group(4)) / 1000)
                behind.append(int(m.group(5)) + int(m.group(6)))
if pauses:
    s, t = sorted(pauses), sorted(behind)
    q = lambda s, f: s[min(len(s) - 1, int(f * len(s)))]
    print(f"checkpoints {len(pauses)}: image {sizes[0]/2**20:.2f} MB first, {sizes[-1]/2**20:.2f} MB last, "
          f"{max(sizes)/2**20:.2f} MB largest; event-loop pause p50 {q(s, 0.5):.1f} ms, p99 {q(s, 0.99):.1f} ms, "
          f"max {s[-1]:.1f} ms; encoded and written in the background in p50 {q(t, 0.5)} ms, max {t[-1]} ms; "
          f"the loop's longest unforced journal flush meanwhile p99 {q(sorted(flushes), 0.99):.1f} ms, max {max(flushes):.1f} ms "
          f"(between checkpoints: p99 {q(sorted(between), 0.99):.1f} ms, max {max(between):.1f} ms)")
else:
    print("checkpoints: none logged")
most, keys, node, pruned = 0, 0, None, 0
try:
    for line in open(f"{d}/h.jsonl"):
        if line.startswith('{"type":"replica"'):
            r = json.loads(line)
            n = sum(len(k["versions"]) for k in r["keys"].values())
            if n > most:
                most, keys, node = n, len(r["keys"]), r["node"]
                pruned = sum(r.get("pruned", {}).values())
    print(f"versions at the end: {most} on node {node}, over {keys} keys ({pruned} collected there)")
except FileNotFoundError:
    print("versions: no history written")
try:
    r = json.load(open(f"{d}/bench.json"))
    c = r.get('check', {})
    print(f"committed {r.get('committed')}, throughput {r.get('throughput_tps', 0):.0f} txn/s, check: "
          f"serializable {c.get('serializable')} durable {c.get('durable')}")
except Exception as e:
    print(f"bench report unreadable: {e}")
EOF
done
