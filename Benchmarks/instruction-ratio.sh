#!/usr/bin/env bash
# The ratio to both floors by instruction counts (valgrind callgrind): repeatable on a machine whose
# speed drifts. Runs the release CLI on one lane over 2,000 EC_v1 tokens from Vectors/ and compares
# the instructions per token (steady state: the one-time admission of the signing chain, with its
# precomputed table, is reported apart) with the two floors, each run 2,000 times by instruction-floors:
#   classic floor   - EVP_PKEY_verify + EVP_PKEY_derive (ECDH) with contexts prepared once;
#   fixed-key floor - ECDSA with a precomputed table for the signer's key + ECDH through EC_POINT_mul,
#                     on prepared inputs (what the engine itself does, minus everything else).
# Both floors cycle through the same 64 signatures (the order inverse's cost depends on s).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install -y valgrind)" >&2; exit 2; }
swift build -c release --product applepay-decrypt >/dev/null 2>&1
swift build -c release --package-path Benchmarks --product instruction-floors >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=2000
# The archive's EC_v1 tokens that decrypt (lines 1-6 and 19-22), repeated: replays are flagged only
# after the full verification and decryption, so every line costs a whole token.
for _ in $(seq 200); do sed -n '1,6p;19,22p' Vectors/archive.jsonl; done > "$work/ec.jsonl"
valgrind --tool=callgrind --callgrind-out-file="$work/engine.out" .build/release/applepay-decrypt batch "$work/ec.jsonl" \
  --out "$work/out.jsonl" --lanes 1 --quiet \
  --merchant cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem \
  --trust-root Vectors/trust/test-root.pem --now 2026-03-01T12:01:00Z 2>/dev/null
valgrind --tool=callgrind --callgrind-out-file="$work/floors.out" Benchmarks/.build/release/instruction-floors "$n" >/dev/null 2>&1
{
  callgrind_annotate --inclusive=yes "$work/engine.out" 2>/dev/null | sed 's/^/engine /'
  callgrind_annotate --inclusive=yes "$work/floors.out" 2>/dev/null | sed 's/^/floors /'
} | awk -v n=$n '
  function count(s) { gsub(",", "", s); return s + 0 }
  # Inclusive cost lines only ("COUNT (PCT%)  file:function [object]"), not annotated source lines.
  !/^(engine|floors) +[0-9,]+ \([ 0-9.%]+\)  [^ =]/ { next }
  /^engine / && /PROGRAM TOTALS/ { total = count($2) }
  /^engine / && /WindowJob.*run2on/ && lane == "" { lane = count($2) }
  /^engine / && /SignerChainCacheC5admit.*\[/ && admit == "" { admit = count($2) }
  /^engine / && /EC_GROUP_precompute_mult/ && table == "" { table = count($2) }
  /^engine / && /P256FixedKeyVerifierC6verify_.*\[/ && everify == "" { everify = count($2) }
  /^engine / && /P256PointAgreementC12sharedSecret.*\[/ && eecdh == "" { eecdh = count($2) }
  /^floors / && /classicECTokenSbyF \[/ { classic = count($2) }
  /^floors / && /fixedKeyECTokenSbyF \[/ { fixed = count($2) }
  /^floors / && /\?\?\?:EVP_PKEY_verify / { verify = count($2) }
  /^floors / && /\?\?\?:ECDH_compute_key / { ecdh = count($2) }
  /^floors / && /P256FixedKeyVerifierC6verify_.*\[/ && fverify == "" { fverify = count($2) }
  /^floors / && /P256PointAgreementC12sharedSecret.*\[/ && fecdh == "" { fecdh = count($2) }
  END {
    steady = lane - admit  # the first token of a new chain admits it: once per signing certificate
    printf "instructions per EC_v1 token (callgrind, %d tokens, one lane)\n", n
    printf "  classic floor:   ECDSA verify (EVP) %.0f + ECDH (EVP) %.0f = %.0f\n", verify / n, ecdh / n, classic / n
    printf "  fixed-key floor: ECDSA verify (table) %.0f + ECDH (EC_POINT) %.0f = %.0f\n", fverify / n, fecdh / n, fixed / n
    printf "  engine lane, steady state (parse, verify, decrypt, payload): %.0f (of which verify %.0f, ECDH %.0f)\n", steady / n, everify / n, eecdh / n
    printf "    -> %.2f x classic floor, %.2f x fixed-key floor\n", classic / steady, fixed / steady
    printf "  once per signing certificate (chain check and table): %.0f instructions, of which the table %.0f\n", admit, table
    printf "  engine lane including that once: %.0f  -> %.2f x classic floor, %.2f x fixed-key floor\n", lane / n, classic / lane, fixed / lane
    printf "  whole CLI run (start-up, keys, input, output lines): %.0f  -> %.2f x classic floor, %.2f x fixed-key floor\n", total / n, classic / total, fixed / total
  }'
