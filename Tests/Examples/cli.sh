#!/usr/bin/env bash
# The command-line examples of the articles (CommandLine.md), run by .ci/run after `swift test`, whose
# debug build of applepay-decrypt they use: each ```sh block there is a run of lines of this file.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.build/debug:$PATH"
# What the checkout looks like to git before and after (outside a git work tree: nothing to compare).
checkout_state() { git status --porcelain --ignored=no 2>/dev/null || true; }
before=$(checkout_state)

applepay-decrypt decrypt Vectors/tokens/ec-3dsecure.json \
  --merchant cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem \
  --trust-root Vectors/trust/test-root.pem --now 2026-03-01T12:01:00Z > /dev/null

out=$(mktemp -d)  # the results hold card data: keep them out of the checkout
applepay-decrypt batch Vectors/archive.jsonl --out "$out/results.jsonl" \
  --merchant cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem \
  --merchant cert=Vectors/merchants/rsa.cert.pem,key=Vectors/merchants/rsa.key.pem \
  --trust-root Vectors/trust/test-root.pem --now 2026-03-01T12:01:00Z
[ "$(wc -l < "$out/results.jsonl")" -eq 22 ] || { echo "batch example: not 22 lines" >&2; exit 1; }

keys=(--merchant cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem
  --merchant cert=Vectors/merchants/rsa.cert.pem,key=Vectors/merchants/rsa.key.pem
  --trust-root Vectors/trust/test-root.pem --now 2026-03-01T12:01:00Z)
for k in 1 2 3 4; do  # or one machine each: a Kubernetes Indexed Job, a Slurm array
  applepay-decrypt batch Vectors/archive.jsonl --shard "$k/4" --out "$out/part$k.jsonl" "${keys[@]}" --quiet
done
applepay-decrypt merge "$out"/part?.jsonl --out "$out/merged.jsonl"  # the parts in any order
cmp "$out/merged.jsonl" "$out/results.jsonl"  # byte for byte the unsharded run's
rm "$out"/part?.jsonl*  # the parts hold card data: remove them once merged

[ "$(checkout_state)" = "$before" ] || { echo "the CLI examples wrote into the checkout" >&2; exit 1; }
rm -rf "$out"
echo "CLI examples: decrypt, batch, 4 shards merged byte for byte"
