#!/usr/bin/env bash
# Runs the factory's token minter (Sources/mint-tokens) with the arguments given: $APPLEPAY_MINT_TOKENS when
# set, else the checkout's debug build, else its release build, else a debug one built here. Every script
# that mints (the C ABI and JVM runners, the fuzzers' seeds, the allocation guard, .ci/dist-check) calls it,
# so the choice is made one way: the tokens are the same from any build, and a build made only for minting
# costs CI minutes (CI's `swift test` has built the debug one).
#   Tests/mint-tokens.sh [mint-tokens arguments...]      (Tests/mint-tokens.sh --help)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mint=${APPLEPAY_MINT_TOKENS:-}
if [ -z "$mint" ]; then
  for candidate in "$root/.build/debug/mint-tokens" "$root/.build/release/mint-tokens"; do
    if [ -x "$candidate" ]; then mint=$candidate; break; fi
  done
fi
if [ -z "$mint" ]; then
  (cd "$root" && swift build --product mint-tokens >&2)
  mint=$root/.build/debug/mint-tokens
fi
exec "$mint" "$@"
