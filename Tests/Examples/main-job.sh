#!/usr/bin/env bash
# README.md's first command, verbatim (the main job on the bundled Vectors/), run by .ci/run after `swift
# test`: it writes results.jsonl at the checkout's root, which .gitignore ignores, then this script checks
# the result and removes it. Needs root (apt-get) as CI has.
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -f results.jsonl results.jsonl.*

apt-get update && apt-get install -y libsodium-dev libssl-dev pkg-config softhsm2 opensc openssl && swift run applepay-decrypt batch Vectors/archive.jsonl --out results.jsonl --merchant cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem --merchant cert=Vectors/merchants/rsa.cert.pem,key=Vectors/merchants/rsa.key.pem --trust-root Vectors/trust/test-root.pem --now 2026-03-01T12:01:00Z

lines=$(wc -l < results.jsonl)
[ "$lines" -eq 22 ] || { echo "main job: $lines result lines, expected 22" >&2; exit 1; }
[ "$(grep -c '"payment":' results.jsonl)" -eq 12 ] || { echo "main job: not 12 payments" >&2; exit 1; }
[ "$(stat -c %a results.jsonl)" = 600 ] || { echo "main job: results.jsonl is not mode 0600" >&2; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git check-ignore -q results.jsonl || { echo "main job: its output is not git-ignored" >&2; exit 1; }
fi
for side in lock partial claims checkpoint runkey; do  # a completed run leaves its output alone
  [ ! -e "results.jsonl.$side" ] || { echo "main job: results.jsonl.$side was left behind" >&2; exit 1; }
done
rm -f results.jsonl results.jsonl.*
echo "main job example: 22 lines, 12 payments, mode 0600, git-ignored"
