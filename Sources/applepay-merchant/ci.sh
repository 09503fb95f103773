#!/usr/bin/env bash
# The merchant API client's CI: installs what its tests need (openssl, for the test PKI), builds the main
# CLI (for the merchant-session dispatch test), then builds and tests this package against its loopback
# HTTPS gateway. Exits non-zero on any failure; prints its wall time.
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd ../.. && pwd)
started=$(date +%s)

need=()
for pkg in openssl ca-certificates; do dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg"); done
if [ "${#need[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}"
fi

# The engine's CLI: .ci/run's `swift test` has built it already, so this is a no-op there.
(cd "$repo" && swift build --product applepay-decrypt)
APPLEPAY_DECRYPT_BIN="$(cd "$repo" && swift build --show-bin-path)/applepay-decrypt"
export APPLEPAY_DECRYPT_BIN

swift build --build-tests
# XCTest only: the package has no Swift Testing suites, and an empty Swift Testing run's closing line
# ("0 tests") would otherwise be the last word of the whole CI run.
swift test --disable-swift-testing
echo "merchant API client CI passed in $(( $(date +%s) - started )) s"
