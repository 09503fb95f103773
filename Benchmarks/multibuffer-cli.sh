#!/usr/bin/env bash
# The whole CLI with --multibuffer on and off, interleaved, over fresh factory tokens (start-up
# included: each figure is one process from exec to exit). Usage (from the repository root, after
# `swift build -c release --product applepay-decrypt --product mint-tokens`):
#   APPLEPAY_CRYPTO_MB=/path/to/libcrypto_mb.so.13 Benchmarks/multibuffer-cli.sh [TOKENS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
tokens="${1:-16000}" rounds="${2:-3}"
bin=.build/release
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# MINT_TOKENS: another build's mint-tokens will do (minting is not timed); TOKENS_DIR: tokens minted
# before (mint-tokens DIR COUNT), used as they are.
if [ -n "${TOKENS_DIR:-}" ]; then work="$TOKENS_DIR"; trap - EXIT; else "${MINT_TOKENS:-$bin/mint-tokens}" "$work" "$tokens" >/dev/null; fi
input="$work/tokens.jsonl"
options=(--merchant "cert=$work/merchant.cert.pem,key=$work/merchant.key.pem" --trust-root "$work/insecure-test-root.pem"
         --now 2026-03-01T12:00:30Z --quiet)
declare -A times
for lanes in 1 2; do
  for round in $(seq 0 "$rounds"); do
    for mode in on off; do
      rm -f "$work/out-$mode.jsonl"
      start=$(date +%s.%N)
      "$bin/applepay-decrypt" batch "$input" --out "$work/out-$mode.jsonl" --lanes "$lanes" --multibuffer "$mode" "${options[@]}" 2>"$work/err-$mode"
      end=$(date +%s.%N)
      # Round 0 warms the page cache; it is not counted.
      [ "$round" -gt 0 ] && times[$mode-$lanes]+="$(echo "$end - $start" | bc) "
    done
    cmp -s "$work/out-on.jsonl" "$work/out-off.jsonl" || { echo "on and off outputs differ" >&2; exit 1; }
  done
  tail -n 1 "$work/err-on" >&2
  for mode in on off; do
    med=$(printf '%s\n' ${times[$mode-$lanes]} | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
    printf 'CLI, %d lane(s), --multibuffer %-3s: %d tokens in %.3f s (median of %d) = %.0f tokens/s\n' "$lanes" "$mode" "$tokens" "$med" "$rounds" "$(echo "$tokens / $med" | bc -l)"
    eval "med_$mode=$med"
  done
  printf 'CLI, %d lane(s): on is %.2f × off\n' "$lanes" "$(echo "$med_off / $med_on" | bc -l)"
done
