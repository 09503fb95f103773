#!/usr/bin/env bash
# The examples of the article on getting the keys (GettingTheKeys.md), run by .ci/run after `swift test`,
# whose debug build of applepay-decrypt they use: each ```sh block there is a run of lines of this file.
# An openssl test CA stands in for Apple's portal, which signs the request with Apple's own CA.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.build/debug:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

applepay-decrypt keys apple-csr --merchant-id merchant.com.example.shop --key-out merchant.key --csr-out merchant.csr
openssl req -in merchant.csr -verify -noout

# What Apple's portal does with the request, by a test CA: a certificate for its key, with the merchant
# identifier in the subject's UID and SHA-256 of it in the 1.2.840.113635.100.6.32 extension, as DER.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
  -subj "/CN=Test CA standing in for Apple" 2>/dev/null
hash=$(printf %s merchant.com.example.shop | sha256sum | cut -c1-64)
printf '1.2.840.113635.100.6.32=ASN1:UTF8String:%s\n' "$hash" >ext.cnf
openssl x509 -req -in merchant.csr -CA ca.pem -CAkey ca.key -days 825 -extfile ext.cnf -outform DER \
  -subj "/UID=merchant.com.example.shop/CN=Apple Pay Payment Processing:merchant.com.example.shop" \
  -out apple_pay.cer 2>/dev/null

applepay-decrypt keys check apple_pay.cer --key merchant.key

# A mismatched pair (another key) is exit 1.
applepay-decrypt keys apple-csr --merchant-id merchant.com.example.shop --key-out other.key --csr-out other.csr >/dev/null
if applepay-decrypt keys check apple_pay.cer --key other.key >check.out; then
  echo "keys check accepted a key the certificate was not made for" >&2; exit 1
fi
grep -q 'problem: keyMismatch' check.out

applepay-decrypt keys google --key-out google-merchant.key

[ "$(stat -c %a merchant.key google-merchant.key | sort -u)" = 600 ] || { echo "a key file is not 0600" >&2; exit 1; }
echo "keys examples: apple-csr (openssl req -verify), check (matching and mismatched), google"
