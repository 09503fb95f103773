#!/usr/bin/env bash
# The Spark job of two trees over the same fresh EC tokens, alternated ABBA (round 1 BEFORE first, round 2 AFTER
# first, ...): each run's job time (its "tokens in" line), wall time and the load average, and each round's two
# outputs compared byte for byte. For a before-and-after of a change (issue 40: the front door); a figure is only
# compared with the other side's in the same round.
# Usage: Benchmarks/front-door/spark-abba.sh BEFORE_TREE [COUNT [ROUNDS]] (default 100000 4); AFTER is this tree.
# Each tree needs .build/release/libapplepay.so; this one also mint-tokens (swift build -c release --product ...).
set -euo pipefail
cd "$(dirname "$0")/../.."
before=$(cd "$1" && pwd) after=$PWD count=${2:-100000} rounds=${3:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.build/release/mint-tokens "$work/minted" "$count" >/dev/null
common=(--merchant "cert=$work/minted/merchant.cert.pem,key=$work/minted/merchant.key.pem"
        --trust-root "$work/minted/insecure-test-root.pem" --now 2026-03-01T12:01:00Z --master 'local[2]')
export SPARK_LOCAL_IP=127.0.0.1
for round in $(seq 1 "$rounds"); do
  order="before after"; [ $((round % 2)) = 1 ] || order="after before"
  for side in $order; do
    tree=$after; [ "$side" = before ] && tree=$before
    load=$(cut -d' ' -f1 /proc/loadavg) started=$(date +%s.%N)
    APPLEPAY_LIBRARY=$tree/.build/release/libapplepay.so PYTHONPATH=$tree/Sources/python \
      python3 -m applepay.spark "$work/minted/tokens.jsonl" --out "$work/out-$side" "${common[@]}" 2>"$work/$side.log"
    wall=$(echo "$(date +%s.%N) - $started" | bc)
    job=$(sed -n 's/.*tokens in \([0-9.]*\) s.*/\1/p' "$work/$side.log" | tail -1)
    printf 'round %d %-6s job %6.2f s, wall %6.2f s, load %s\n' "$round" "$side" "$job" "$wall" "$load"
  done
  cat "$work"/out-before/part-* | cmp - <(cat "$work"/out-after/part-*) || { echo "round $round: outputs differ" >&2; exit 1; }
  rm -rf "$work"/out-before "$work"/out-after
done
