#!/usr/bin/env bash
# A one-second crash of each server in turn (docs/MEASUREMENTS.md, "A one-second server
# crash" and after): `us3fast` (three DCs 0.2 ms apart, two servers each, six shards),
# bank with 8 clients, SEED (default 1), server N down from 2 s to 3 s, for N = 0..5.
# For each N this prints the start of the first half-second window from 3 s on whose
# commits reach 4/5 of the mean over 0.5-2 s ("never" if none does before 20 s); a
# protocol that resumes as soon as the server is back prints 3.0 or 3.5.
#
# Usage: [MERIDIAN=target/release/meridian] [SEED=1] [TXNS=30000] scripts/crash-scan.sh PROTO
set -euo pipefail
P=${1:?usage: scripts/crash-scan.sh PROTO}
M=${MERIDIAN:-target/release/meridian}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cat >"$D/us3fast.toml" <<'EOF'
dcs = ["NY", "CA", "TX"]
nodes_per_dc = 2
shards = 6
intra_rtt_ms = 0.1
rtt_ms = [[0, 0.2, 0.2], [0.2, 0, 0.2], [0.2, 0.2, 0]]
EOF
out=""
for n in 0 1 2 3 4 5; do
  "$M" sim --protocol "$P" --topology "$D/us3fast.toml" --workload bank --txns "${TXNS:-30000}" \
    --clients 8 --seed "${SEED:-1}" --faults "crash:node=$n,at=2s,for=1s" --history "$D/h$n.jsonl" >/dev/null
  out="$out $(python3 - "$D/h$n.jsonl" <<'EOF'
import collections, json, sys
half = collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") == "txn" and r["outcome"] == "committed":
        half[int(r["end"] // 500_000_000)] += 1
before = sum(half[w] for w in (1, 2, 3)) / 3
print(next((str(w / 2) for w in range(6, 40) if half[w] >= 0.8 * before), "never"))
EOF
)"
done
echo "$P seed ${SEED:-1}:$out"
