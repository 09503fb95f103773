#!/usr/bin/env bash
# EC_v1 and RSA_v1 tokens/s with the merchant key inside SoftHSM2 (PKCS#11: C_DeriveKey or C_Decrypt per
# token) against the same key in software, on 1 and 2 lanes, in one run, through `applepay-decrypt batch`.
# The per-token cost of the PKCS#11 calls is the difference of the 1-lane times per token. SoftHSM2 2.6.1
# implements RSA-OAEP with SHA-1 only, so its RSA_v1 keys take the raw route (CKM_RSA_X_509 in the token,
# OAEP decoded in the process); a module that refuses a key makes its column read "refused".
# A benchmark, not a test: the figures depend on the machine and its load. Usage:
#   Benchmarks/pkcs11-throughput.sh            (COUNT=2000 tokens per kind, CONFIG=release)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-2000}
config=${CONFIG:-release}
module=${SOFTHSM2_MODULE:-/usr/lib/softhsm/libsofthsm2.so}
for tool in softhsm2-util pkcs11-tool; do command -v $tool >/dev/null || { echo "$tool is missing (apt-get install softhsm2 opensc)" >&2; exit 1; }; done

swift build -c "$config" --product applepay-decrypt >&2
swift build -c "$config" --product mint-tokens >&2
bin=.build/$config
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A private token directory: never the system's /var/lib/softhsm.
mkdir "$work/tokens"
printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' "$work/tokens" > "$work/softhsm2.conf"
export SOFTHSM2_CONF=$work/softhsm2.conf
pin=135791
printf '%s\n' "$pin" > "$work/pin"
softhsm2-util --init-token --free --label bench --pin "$pin" --so-pin 246802 >/dev/null

for kind in ec rsa; do
    "$bin/mint-tokens" "$work/$kind" "$count" $([ $kind = rsa ] && echo rsa) >&2
    usage=$([ $kind = rsa ] && echo --usage-decrypt || echo --usage-derive)
    pkcs11-tool --module "$module" --token-label bench --login --pin "$pin" --write-object "$work/$kind/merchant.key.pem" \
        --type privkey --label "$kind" "$usage" >/dev/null
done

# tokens/s from the CLI's summary line ("N tokens in S s (R tokens/s, ...").
run() { # kind lanes merchant-spec
    ("$bin/applepay-decrypt" batch "$work/$1/tokens.jsonl" --out "$work/out.jsonl" --merchant "$3" --lanes "$2" --quiet \
        --trust-root "$work/$1/insecure-test-root.pem" --now 2026-03-01T12:01:00Z 2>&1 >/dev/null || true) \
        | sed -n 's/.*tokens in [0-9.]* s (\([0-9]*\) tokens\/s.*/\1/p' | tail -1
}
# Every result must be ok: a figure for failed tokens would mean nothing.
check() { local bad; bad=$(grep -c '"error":' "$work/out.jsonl" || true); [ "$bad" -eq 0 ] || { echo "$bad tokens failed: $(grep '"error":' "$work/out.jsonl" | head -1)" >&2; exit 1; }; }

printf '%-7s %-6s %12s %12s %10s\n' kind lanes software pkcs11 ratio
for kind in ec rsa; do
    soft="cert=$work/$kind/merchant.cert.pem,key=$work/$kind/merchant.key.pem"
    hsm="cert=$work/$kind/merchant.cert.pem,pkcs11=pkcs11:token=bench;object=$kind;type=private?module-path=$module&pin-source=file:$work/pin"
    for lanes in 1 2; do
        rm -f "$work/out.jsonl"; s=$(run $kind $lanes "$soft"); check
        rm -f "$work/out.jsonl"; h=$(run $kind $lanes "$hsm" || true)
        if [ -z "$h" ]; then
            printf '%-7s %-6s %10s/s %12s %10s\n' "$([ $kind = ec ] && echo EC_v1 || echo RSA_v1)" "$lanes" "$s" refused -
            eval "cost_$kind=n/a"; continue
        fi
        check
        printf '%-7s %-6s %10s/s %10s/s %9s\n' "$([ $kind = ec ] && echo EC_v1 || echo RSA_v1)" "$lanes" "$s" "$h" "$(awk -v s="$s" -v h="$h" 'BEGIN { printf "%.2fx", s / h }')"
        if [ "$lanes" = 1 ]; then
            eval "cost_$kind=\$(awk -v s=\"\$s\" -v h=\"\$h\" 'BEGIN { printf \"%.0f\", 1e6 / h - 1e6 / s }')"
        fi
    done
done
echo "per-token cost of the PKCS#11 calls (1 lane, token minus software): EC_v1 ${cost_ec} µs (C_DeriveKey + C_GetAttributeValue + C_DestroyObject instead of in-process ECDH), RSA_v1 ${cost_rsa} µs (C_DecryptInit + C_Decrypt instead of in-process OAEP)"
