#!/usr/bin/env bash
# Issue 40's table (Tests/FrontEnds/test_every_front_end.py): every Apple Pay, Google Pay and Samsung Pay test case
# through the Swift API, the CLI's decrypt and batch, the C ABI, Python, Go, the service and Spark; one code and field each,
# and a token given twice a replay naming its wallet's field. Run by .ci/run once every build exists: `swift test`'s
# debug build and test build, the C ABI step's release libapplepay.so and mint-tokens, the server package's debug
# build (Sources/Server/ci.sh); each `swift build` below is a no-op then, and builds what is missing otherwise.
# Needs go, Java and pyspark (the C ABI and Spark steps install them). Fails on any failure, on any front end that
# cannot run (a missing piece is a failure, not a skip), and when fewer tests ran than there are.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
started=$SECONDS
step() { printf '\n== %s (%ds)\n' "$1" $((SECONDS - started)); }

step "builds (no-ops after .ci/run's earlier steps)"
swift build --product applepay-decrypt
swift build -c release --product applepay
swift build --product mint-tokens
swift build --package-path Sources/Server --product applepay-service
service_bin=$(swift build --package-path Sources/Server --show-bin-path)/applepay-service
# The Swift API's column is FrontEndTableTests, run from the test build `swift test` made (--skip-build); without
# one (a run of this script alone), build it.
if [ -z "${APPLEPAY_SWIFT_TEST:-}" ] && ! compgen -G ".build/debug/*PackageTests.xctest" >/dev/null; then
  swift build --build-tests
fi
command -v go >/dev/null || { echo "go is missing: apt-get install -y golang-go" >&2; exit 1; }
command -v java >/dev/null || { echo "java is missing: apt-get install -y openjdk-17-jre-headless" >&2; exit 1; }
python3 -c 'import pytest, pyspark, pyarrow' || { echo "pytest, pyspark or pyarrow is missing (pip install pytest pyspark==4.0.1 pyarrow pandas)" >&2; exit 1; }

step "every front end over every case (pytest Tests/FrontEnds)"
expected=$(PYTHONPATH=$root/Sources/python python3 -m pytest -q -p no:cacheprovider --collect-only Tests/FrontEnds 2>/dev/null \
  | grep -c '::' || true)
status=0
times=$(mktemp)
trap 'rm -f "$times"' EXIT
out=$(APPLEPAY_FRONT_END_TIMES=$times APPLEPAY_CLI=$root/.build/debug/applepay-decrypt APPLEPAY_LIBRARY=$root/.build/release/libapplepay.so \
      APPLEPAY_MINT_TOKENS=$root/.build/debug/mint-tokens APPLEPAY_SERVICE=$service_bin \
      PYTHONPATH=$root/Sources/python SPARK_LOCAL_IP=127.0.0.1 \
      python3 -m pytest -q -p no:cacheprovider -rf Tests/FrontEnds 2>&1) || status=$?
printf '%s\n' "$out"
cat "$times"
[ "$status" -eq 0 ] || { echo "front-end table: pytest failed (exit $status)" >&2; exit 1; }
passed=$(printf '%s\n' "$out" | sed -n 's/^\([0-9][0-9]*\) passed.*/\1/p' | tail -1)
[ "$expected" -ge 22 ] && [ "${passed:-0}" -eq "$expected" ] \
  || { echo "front-end table: ${passed:-0} tests passed of $expected collected (expected at least 22)" >&2; exit 1; }
step "every front end agrees"
