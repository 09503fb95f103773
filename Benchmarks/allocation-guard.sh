#!/usr/bin/env bash
# Heap allocations per token of the whole batch CLI, counted from outside (LD_PRELOAD of
# Benchmarks/AllocationCount/alloc-count.c): one release `applepay-decrypt batch --lanes 1` over SMALL
# and one over LARGE fresh factory tokens; (count(LARGE) - count(SMALL)) / (LARGE - SMALL) is what each
# further token costs, with start-up, key loading and the summary cancelled out. Checked against
# Benchmarks/Thresholds/cli-allocations.txt (EC_v1, RSA_v1 and Google Pay ECv2 (`mint-tokens google`,
# Google keys alone); a regression beyond the tolerance fails,
# an improvement says how to lock it in). .ci/run runs it after the C ABI step's release build.
#
#   Benchmarks/allocation-guard.sh [--update]
#
# Needs .build/release/applepay-decrypt (`swift build -c release --product applepay-decrypt`) and a C compiler;
# the tokens come from Tests/mint-tokens.sh (any build of mint-tokens: it only makes the input).
set -euo pipefail
cd "$(dirname "$0")/.."
small=500 large=2500
thresholds=Benchmarks/Thresholds/cli-allocations.txt
bin=.build/release
[ -x "$bin/applepay-decrypt" ] || { echo "allocation guard: $bin/applepay-decrypt is missing; swift build -c release --product applepay-decrypt" >&2; exit 2; }
mint=Tests/mint-tokens.sh
work="$(mktemp -d "${TMPDIR:-/tmp}/applepay-allocations.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cc -O2 -shared -fPIC -o "$work/alloc-count.so" Benchmarks/AllocationCount/alloc-count.c

count() {  # count KIND DIR N: allocations of one batch run over the first N tokens of DIR
  local kind="$1" dir="$2" n="$3" keys
  head -n "$n" "$dir/tokens.jsonl" > "$work/input.jsonl"
  rm -f "$work/out.jsonl"
  if [ "$kind" = google ]; then
    keys=(--google-root-keys "$dir/root_keys.json" --google-recipient-id merchant:12345678901234567890
      --google-merchant-key "$dir/merchant_key.pem")
  else
    keys=(--merchant "cert=$dir/merchant.cert.pem,key=$dir/merchant.key.pem" --trust-root "$dir/insecure-test-root.pem")
  fi
  ALLOC_COUNT_FILE="$work/count" LD_PRELOAD="$work/alloc-count.so" "$bin/applepay-decrypt" batch "$work/input.jsonl" \
    --out "$work/out.jsonl" --lanes 1 --multibuffer off --quiet --now 2026-03-01T12:00:30Z "${keys[@]}" 2>"$work/err" \
    || { cat "$work/err" >&2; exit 1; }
  grep -q "ok $n" "$work/err" || { echo "allocation guard: not every token decrypted:" >&2; cat "$work/err" >&2; exit 1; }
  cat "$work/count"
}

status=0 updated=()
for kind in ec rsa google; do
  dir="$work/$kind"
  if [ "$kind" = google ]; then
    "$mint" google "$dir" "$large" >/dev/null
  else
    "$mint" "$dir" "$large" "$kind" >/dev/null
  fi
  a=$(count "$kind" "$dir" "$small") b=$(count "$kind" "$dir" "$large")
  per=$(echo "scale=1; ($b - $a) / ($large - $small)" | bc)
  case "$kind" in ec) name=EC_v1 ;; rsa) name=RSA_v1 ;; *) name=GooglePay_ECv2 ;; esac
  read -r _ stored tolerance < <(grep "^$name " "$thresholds")
  updated+=("$name $per $tolerance")
  printf 'allocation guard: %s: %s allocations per token (%d tokens: %d, %d tokens: %d); stored %s, tolerance %s\n' \
    "$name" "$per" "$small" "$a" "$large" "$b" "$stored" "$tolerance"
  if [ "$(echo "$per > $stored + $tolerance" | bc)" = 1 ]; then
    echo "allocation guard: $name regressed: $per allocations per token against $stored stored" >&2; status=1
  elif [ "$(echo "$per < $stored - $tolerance" | bc)" = 1 ]; then
    echo "allocation guard: $name improved ($per against $stored); lock it in with Benchmarks/allocation-guard.sh --update"
  fi
done
if [ "${1:-}" = --update ]; then
  { grep '^#' "$thresholds"; printf '%s\n' "${updated[@]}"; } > "$work/thresholds" && cp "$work/thresholds" "$thresholds"
  echo "allocation guard: $thresholds updated"; exit 0
fi
exit "$status"
