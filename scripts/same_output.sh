#!/usr/bin/env bash
# Behaviour-identity check for refactors: runs the same seeded simulations (every
# protocol variant, four workloads and fault mixes, each writing its history), every
# simulated paper experiment and `compare` with two `meridian` binaries, and diffs
# the outputs (wall-clock lines dropped). Exit 0 when byte-identical.
#
#   cargo build --release && cp target/release/meridian /tmp/meridian.before
#   ... change ...
#   cargo build --release && scripts/same_output.sh /tmp/meridian.before target/release/meridian
#
# Every experiment takes over half an hour per binary on two cores; EXPERIMENTS (an
# extended regex over experiment names) runs a selection, e.g.
#   EXPERIMENTS='^(rc-fig3|cs-fig4|hv-analysis|cat-fig6)$' scripts/same_output.sh A B
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BIN_BEFORE BIN_AFTER" >&2; exit 2; }
work=$(mktemp -d)
run() {
  local bin=$1 out=$2 i=0
  mkdir -p "$out"
  for p in 2pc-2pl 2pc-occ "2pc-2pl:copies=2" rc replog hacommit hacommit-rc "hacommit:replicas=5" crossstitch \
           pc-2pl pc-occ hier-lock hier-ts 2pc-deferred catenae; do
    for args in "--topology us3 --workload ycsb --txns 300 --clients 16 --seed 3 --faults random" \
                "--topology two50 --workload bank --txns 300 --clients 8 --seed 5 --faults random:crashes=3,serial=5s" \
                "--topology world3 --workload tpcc:mix=standard --txns 200 --clients 8 --seed 7" \
                "--topology lan --workload script --txns 300 --clients 8 --seed 11 --faults loss:p=0.05;dup:p=0.05;reorder:p=0.2"; do
      i=$((i+1))
      [ "$p" = "hacommit:replicas=5" ] && [[ "$args" == *two50* ]] && continue
      [ "$p" = "hacommit-rc" ] && [[ "$args" == *bank* || "$args" == *tpcc* ]] && continue
      # shellcheck disable=SC2086
      "$bin" sim --protocol "$p" $args --history "$out/h$i.jsonl" 2>&1 | grep -v "events in" > "$out/o$i.txt" || true
    done
  done
  for e in $("$bin" compare --experiment list | awk '{print $1}' | grep -v '^cluster-' | grep -E "${EXPERIMENTS:-.}"); do
    "$bin" compare --experiment "$e" 2>&1 | grep -v wall > "$out/e-$e.txt" || true
  done
  "$bin" compare 2>&1 | grep -v wall > "$out/compare.txt" || true
}
run "$1" "$work/before"
run "$2" "$work/after"
if diff -r "$work/before" "$work/after"; then
  echo "same output ($(ls "$work/before" | wc -l) files)"
  rm -rf "$work"
else
  echo "outputs differ; kept in $work" >&2
  exit 1
fi
