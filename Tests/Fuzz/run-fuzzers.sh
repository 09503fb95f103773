#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzzer + AddressSanitizer, LeakSanitizer on), builds their seed
# corpora from Vectors/, the shared Apple and Google vectors and the factory's Google Pay tokens
# (`mint-tokens google`, when a built mint-tokens is found), and runs each harness for
# SECONDS_PER_HARNESS (default 60). Exits non-zero on any crash, sanitizer report, leak, timeout or out-of-memory.
#
#   Tests/Fuzz/run-fuzzers.sh [SECONDS_PER_HARNESS]
#
# Environment:
#   FUZZ_HARNESSES   which harnesses, default every one: the Apple Pay readers (FuzzToken FuzzCMS
#                    FuzzPayload FuzzDecrypt) and the Google Pay ones (FuzzGooglePayToken
#                    FuzzGooglePaySigned FuzzGooglePayRootKeys FuzzGooglePayMessage FuzzGooglePayDecrypt)
#                    and the Samsung Pay ones (FuzzSamsungPayToken FuzzSamsungPayDecrypt)
#   FUZZ_PARALLEL    harnesses run at once (default 1; 2 on this 2-core machine for long sessions)
#   FUZZ_CORPUS      a directory that keeps each harness's grown corpus between sessions
#                    (FUZZ_CORPUS/<harness>/); default: a temporary one, discarded
#   FUZZ_FLAGS       extra libFuzzer flags for every harness, e.g. "-max_len=65536"
#   FUZZ_FLAGS_<harness>  extra flags for that harness alone, e.g. FUZZ_FLAGS_FuzzDecrypt=-runs=2000000 (a long
#                    run's share of executions per harness; see Benchmarks/RESULTS.md, "Fuzzing: long runs")
#   APPLEPAY_SHARED_VECTORS  the Apple vectors (default ../shared/vectors/apple from the repository);
#                    the Google ones are beside them (../google)
#   APPLEPAY_MINT_TOKENS  the mint-tokens for the factory's Google Pay and Samsung Pay seeds (Tests/mint-tokens.sh:
#                    default the repository's .build/debug or .build/release one, else one built)
# Findings (crash-*, leak-*, timeout-*, oom-*) are kept in Tests/Fuzz/.build/artifacts/<harness>/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
seconds="${1:-60}"
apple_harnesses="FuzzToken FuzzCMS FuzzPayload FuzzDecrypt"
google_harnesses="FuzzGooglePayToken FuzzGooglePaySigned FuzzGooglePayRootKeys FuzzGooglePayMessage FuzzGooglePayDecrypt"
samsung_harnesses="FuzzSamsungPayToken FuzzSamsungPayDecrypt"
harnesses=(${FUZZ_HARNESSES:-$apple_harnesses $google_harnesses $samsung_harnesses})
parallel="${FUZZ_PARALLEL:-1}"
apple="${APPLEPAY_SHARED_VECTORS:-$root/../shared/vectors/apple}"
google="$(dirname "$apple")/google"
[ -d "$apple" ] || echo "note: $apple is missing; the seeds come from Vectors/ alone." >&2
[ -d "$google" ] || echo "note: $google is missing; the Google Pay seeds come from the factory alone." >&2

# Release (-O) with -enable-testing (the CMS and payload harnesses use @testable import): -O inlines
# the standard library's generic code (comparisons, buffer loads) into our instrumented code, where
# libFuzzer sees the comparisons and ASan the accesses; at -Onone that code runs in the uninstrumented
# libswiftCore, and the harnesses ran 1.4-14x slower. Bounds and overflow checks stay (not -Ounchecked).
# swiftc keeps only the last `-sanitize=` it is given, so SwiftPM's `--sanitize=fuzzer --sanitize=address`
# would build without coverage instrumentation: the pair goes in one -Xswiftc flag instead (after
# SwiftPM's own), and `--sanitize=fuzzer` stays so that SwiftPM links libFuzzer's `main` rather than
# the executable's. The gold linker's "Cannot export local symbol '__asan_…'" warnings are noise.
build=(swift build -c release --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing
       --scratch-path "$here/.build")
echo "== building the fuzz harnesses (fuzzer, address; scratch Tests/Fuzz/.build)"
set +e
(cd "$here" && "${build[@]}" 2>&1) | grep -v -e "Cannot export local symbol" -e "^/usr/bin/ld.gold: warning"
built=${PIPESTATUS[0]}
set -e
[ "$built" -eq 0 ] || { echo "run-fuzzers: the build failed (exit $built)" >&2; exit 1; }
bin="$(cd "$here" && "${build[@]}" --show-bin-path)"
for h in "${harnesses[@]}"; do
  [ -x "$bin/$h" ] || { echo "run-fuzzers: $bin/$h was not built" >&2; exit 1; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/applepay-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# The factory's Google Pay tokens (every rule of the format once, cases.jsonl, and good ones).
mint="$root/Tests/mint-tokens.sh"
minted=""
if "$mint" google "$work/minted" 8 >/dev/null; then
  minted="$work/minted"
else
  echo "note: Tests/mint-tokens.sh failed (above); no factory seeds." >&2
fi
minted_samsung=""
if "$mint" samsung "$work/minted-samsung" 4 >/dev/null; then minted_samsung="$work/minted-samsung"; fi
python3 "$here/make-seeds.py" "$work/seeds" "$root" "$apple" "$google" "$minted" "$minted_samsung" | sed 's/^/seeds: /'
# The Google Pay decrypt harness's engine (make-seeds.py wrote it); kept beside the findings, so that a
# finding replays against the same keys.
mkdir -p "$here/.build/artifacts"
rm -rf "$here/.build/artifacts/google-engine"
cp -R "$work/seeds/google-engine" "$here/.build/artifacts/google-engine"
export APPLEPAY_FUZZ_GOOGLE_ENGINE="$here/.build/artifacts/google-engine"
rm -rf "$here/.build/artifacts/samsung-engine"
cp -R "$work/seeds/samsung-engine" "$here/.build/artifacts/samsung-engine"
export APPLEPAY_FUZZ_SAMSUNG_ENGINE="$here/.build/artifacts/samsung-engine"

# Leaks fail the run (libFuzzer's -detect_leaks defaults to 1 under ASan); allocator failures are
# reported rather than returned as NULL, so an oversized allocation is a finding too.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:abort_on_error=0:symbolize=1}"

run_one() {
  local h="$1" corpus seeds dict=()
  case "$h" in
    FuzzToken) seeds="$work/seeds/token"; dict=(-dict="$here/token.dict") ;;
    FuzzDecrypt) seeds="$work/seeds/decrypt"; dict=(-dict="$here/token.dict") ;;
    FuzzCMS) seeds="$work/seeds/cms" ;;
    FuzzPayload) seeds="$work/seeds/payload" ;;
    FuzzGooglePayToken) seeds="$work/seeds/google-token"; dict=(-dict="$here/token.dict") ;;
    FuzzGooglePaySigned) seeds="$work/seeds/google-signed"; dict=(-dict="$here/token.dict") ;;
    FuzzGooglePayRootKeys) seeds="$work/seeds/google-root-keys"; dict=(-dict="$here/token.dict") ;;
    FuzzGooglePayMessage) seeds="$work/seeds/google-message"; dict=(-dict="$here/token.dict") ;;
    FuzzGooglePayDecrypt) seeds="$work/seeds/google-decrypt"; dict=(-dict="$here/token.dict") ;;
    FuzzSamsungPayToken) seeds="$work/seeds/samsung-token"; dict=(-dict="$here/token.dict") ;;
    FuzzSamsungPayDecrypt) seeds="$work/seeds/samsung-decrypt"; dict=(-dict="$here/token.dict") ;;
    *) echo "run-fuzzers: unknown harness $h" >&2; return 2 ;;
  esac
  if [ -n "${FUZZ_CORPUS:-}" ]; then corpus="$FUZZ_CORPUS/$h"; else corpus="$work/corpus/$h"; fi
  mkdir -p "$corpus" "$here/.build/artifacts/$h"
  # New units go to the first directory; the seeds are only read.
  local own="FUZZ_FLAGS_$h"
  "$bin/$h" "$corpus" "$seeds" "${dict[@]}" \
    -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$here/.build/artifacts/$h/" ${FUZZ_FLAGS:-} ${!own:-} >"$work/$h.log" 2>&1
}

summary() {
  local h="$1" status="$2" log="$work/$1.log" runs rate line cov ft
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  line=$(grep -E '^#[0-9]+' "$log" | grep -E 'cov: ' | tail -1 || true)
  cov=$(printf '%s' "$line" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(printf '%s' "$line" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  printf '%-22s %-6s %12s %8s %7s %7s\n' "$h" "$status" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}"
}

echo "== fuzzing ${#harnesses[@]} harnesses for ${seconds}s each (${parallel} at a time)"
declare -A status
pending=("${harnesses[@]}")
while [ "${#pending[@]}" -gt 0 ]; do
  batch=("${pending[@]:0:$parallel}")
  pending=("${pending[@]:$parallel}")
  declare -A pids=()
  for h in "${batch[@]}"; do run_one "$h" & pids[$h]=$!; done
  for h in "${batch[@]}"; do
    if wait "${pids[$h]}"; then status[$h]=ok; else status[$h]="FAIL($?)"; fi
  done
  unset pids
done

failed=0
printf '%-22s %-6s %12s %8s %7s %7s\n' harness result executions exec/s cov ft
for h in "${harnesses[@]}"; do
  summary "$h" "${status[$h]}"
  [ "${status[$h]}" = ok ] || failed=1
done
if [ "$failed" -ne 0 ]; then
  for h in "${harnesses[@]}"; do
    [ "${status[$h]}" = ok ] && continue
    echo "== $h failed; the end of its log (findings in Tests/Fuzz/.build/artifacts/$h/):" >&2
    grep -v '^#' "$work/$h.log" | tail -60 >&2
  done
  exit 1
fi
echo "fuzz: all harnesses ran clean"
