#!/usr/bin/env bash
# The ratio to the floor by instruction counts (valgrind callgrind): repeatable on a machine whose
# speed drifts. Runs the release CLI on one lane over 2,000 EC_v1 tokens from Vectors/ and compares
# the instructions spent per token with those spent inside OpenSSL's ECDSA verify and ECDH.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install -y valgrind)" >&2; exit 2; }
swift build -c release --product applepay-decrypt >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The archive's EC_v1 tokens that decrypt (lines 1-6 and 19-22), repeated: replays are flagged only
# after the full verification and decryption, so every line costs a whole token.
for _ in $(seq 200); do sed -n '1,6p;19,22p' Vectors/archive.jsonl; done > "$work/ec.jsonl"
valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" .build/release/applepay-decrypt batch "$work/ec.jsonl" \
  --out "$work/out.jsonl" --lanes 1 --quiet \
  --merchant cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem \
  --trust-root Vectors/trust/test-root.pem --now 2026-03-01T12:01:00Z 2>/dev/null
callgrind_annotate --inclusive=yes "$work/cg.out" 2>/dev/null | awk -v n=2000 '
  /PROGRAM TOTALS/ { total = $1 }
  /^[0-9,]+ \([ 0-9.%]+\)  \?\?\?:EVP_PKEY_verify / { verify = $1 }
  /^[0-9,]+ \([ 0-9.%]+\)  \?\?\?:ECDH_compute_key / { ecdh = $1 }
  /WindowJob.*run2on/ && lane == "" { lane = $1 }
  END {
    gsub(",", "", total); gsub(",", "", verify); gsub(",", "", ecdh); gsub(",", "", lane)
    printf "instructions per EC_v1 token (callgrind, %d tokens, one lane)\n", n
    printf "  floor: ECDSA verify %.0f + ECDH %.0f = %.0f\n", verify / n, ecdh / n, (verify + ecdh) / n
    printf "  engine lane (parse, verify, decrypt, payload): %.0f  -> %.2f x floor\n", lane / n, (verify + ecdh) / lane
    printf "  whole CLI run (start-up, keys, output lines): %.0f  -> %.2f x floor\n", total / n, (verify + ecdh) / total
  }'
