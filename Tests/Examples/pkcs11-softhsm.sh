#!/usr/bin/env bash
# The PKCS#11 article's SoftHSM2 walk-through (PKCS11.md), run by .ci/run after `swift test`, whose debug
# build of applepay-decrypt it uses: the article's ```sh block is a run of lines of this file.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.build/debug:$PATH"

hsm=$(mktemp -d)  # a private token directory, never the system's
printf 'directories.tokendir = %s\n' "$hsm" > "$hsm/softhsm2.conf"
export SOFTHSM2_CONF=$hsm/softhsm2.conf
softhsm2-util --init-token --free --label payments --pin 123456 --so-pin 654321
printf '123456\n' > "$hsm/pin" && chmod 600 "$hsm/pin"
pkcs11-tool --module /usr/lib/softhsm/libsofthsm2.so --token-label payments --login --pin 123456 \
  --write-object Vectors/merchants/ec.key.pem --type privkey --label merchant-ec --usage-derive
applepay-decrypt batch Vectors/archive.jsonl --out "$hsm/results.jsonl" \
  --merchant "cert=Vectors/merchants/ec.cert.pem,pkcs11=pkcs11:token=payments;object=merchant-ec;type=private?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:$hsm/pin" \
  --merchant cert=Vectors/merchants/rsa.cert.pem,key=Vectors/merchants/rsa.key.pem \
  --trust-root Vectors/trust/test-root.pem --now 2026-03-01T12:01:00Z

[ "$(grep -c '"payment":' "$hsm/results.jsonl")" -eq 12 ] || { echo "PKCS#11 example: not 12 payments" >&2; exit 1; }
rm -rf "$hsm"
echo "PKCS#11 example: the EC key in SoftHSM2, 12 payments as with the key in a file"
