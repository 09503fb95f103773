#!/usr/bin/env bash
# The C ABI's tests: builds libapplepay.so (release), mints factory tokens (Tests/mint-tokens.sh), then runs the
# C tests (plain, with the wipe check and the handle-reuse observer; and under AddressSanitizer + UBSan,
# without quarantine so freed memory is reused at once), the Python (ctypes, pytest) tests, among them
# the result lines against applepay-decrypt's (APPLEPAY_CLI, else .build/debug's, else built here), and
# the Go (cgo) tests. Exits non-zero on any failure, and when a runner finds fewer tests
# than it should (pytest's "no tests ran" or an empty go package must not pass).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vectors=${APPLEPAY_SHARED_VECTORS:-../shared/vectors/apple}
if [ -d "$vectors" ]; then vectors=$(cd "$vectors" && pwd); fi
export APPLEPAY_SHARED_VECTORS=$vectors APPLEPAY_MINTED=$work/minted APPLEPAY_GOOGLE_MINTED=$work/google-minted
google_vectors=${APPLEPAY_GOOGLE_VECTORS:-../shared/vectors/google}
if [ -d "$google_vectors" ]; then google_vectors=$(cd "$google_vectors" && pwd); fi
export APPLEPAY_GOOGLE_VECTORS=$google_vectors
started=$SECONDS
step() { printf '\n== %s (%ds)\n' "$1" $((SECONDS - started)); }

step "build libapplepay.so"
swift build -c release --product applepay
mint=Tests/mint-tokens.sh
# The line test compares with the CLI: CI's `swift test` has built the debug one already.
cli=${APPLEPAY_CLI:-}
if [ -z "$cli" ]; then
  cli=.build/debug/applepay-decrypt
  [ -x "$cli" ] || { swift build -c release --product applepay-decrypt; cli=.build/release/applepay-decrypt; }
fi
export APPLEPAY_CLI=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
lib=.build/release/libapplepay.so
echo "$lib exports: $(nm -D --defined-only "$lib" | awk '$3 ~ /^ap_/ {print $3}' | tr '\n' ' ')"
# What ships links no full Foundation (issue 32): no libFoundation, FoundationInternationalization or ICU,
# which one `import Foundation` in the library's sources would bring back.
if ldd "$lib" | grep -E 'libFoundation\.so|FoundationInternationalization|FoundationICU'; then
  echo "$lib links full Foundation or ICU (above): import FoundationEssentials in Sources/ApplePayC, the engine and the crypto floor" >&2
  exit 1
fi

step "mint ${APPLEPAY_MINT_COUNT:-10000} factory tokens"
"$mint" "$APPLEPAY_MINTED" "${APPLEPAY_MINT_COUNT:-10000}"
step "mint Google Pay factory tokens"
"$mint" google "$APPLEPAY_GOOGLE_MINTED" 100

cc=${CC:-cc}
cflags=(-std=c11 -Wall -Wextra -Werror -g -I Sources/ApplePayC/include Tests/CABI/c/abi_test.c
        -L .build/release -lapplepay -Wl,-rpath,"$root/.build/release" -ldl -lpthread)
hflags=(-std=c11 -Wall -Wextra -Werror -g -I Sources/ApplePayC/include Tests/CABI/c/handles_test.c
        -L .build/release -lapplepay -Wl,-rpath,"$root/.build/release" -lpthread)
step "C test"
"$cc" -O1 -rdynamic "${cflags[@]}" -o "$work/abi_test"
"$work/abi_test" "$root" "$vectors" "$APPLEPAY_MINTED"

step "C handle test (stale, foreign and forged handles; free and use on 4 threads)"
"$cc" -O1 -rdynamic "${hflags[@]}" -o "$work/handles_test"
"$work/handles_test" "$root"

step "C multi-buffer test (ap_decrypt_batch with AP_MULTIBUFFER_ON against OFF; skipped without crypto_mb or IFMA)"
"$cc" -O1 -std=c11 -Wall -Wextra -Werror -g -I Sources/ApplePayC/include Tests/CABI/c/multibuffer_test.c \
  -L .build/release -lapplepay -Wl,-rpath,"$root/.build/release" -o "$work/multibuffer_test"
"$work/multibuffer_test" "$root" "$APPLEPAY_MINTED"

step "C test under AddressSanitizer and UBSan"
"$cc" -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer "${cflags[@]}" -o "$work/abi_test_asan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
LSAN_OPTIONS=suppressions=$root/Tests/CABI/c/lsan.supp:print_suppressions=0 \
  "$work/abi_test_asan" "$root" "$vectors" "$APPLEPAY_MINTED"
"$cc" -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer "${hflags[@]}" -o "$work/handles_test_asan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:quarantine_size_mb=0 \
LSAN_OPTIONS=suppressions=$root/Tests/CABI/c/lsan.supp:print_suppressions=0 \
  "$work/handles_test_asan" "$root"

step "Python (ctypes) tests"
python3 -c 'import pytest' 2>/dev/null || python3 -m pip install -q pytest
# pytest exits 5 when it collects nothing, which set -e already treats as failure; the count check
# also catches a run that silently lost most of its tests.
python_out=$(cd Tests/CABI/python && PYTHONPATH=$root/Sources/python python3 -m pytest -q -p no:cacheprovider 2>&1) || { printf '%s\n' "$python_out"; exit 1; }
printf '%s\n' "$python_out" | tail -3
passed=$(printf '%s\n' "$python_out" | sed -n 's/^\([0-9][0-9]*\) passed.*/\1/p' | tail -1)
[ "${passed:-0}" -ge 90 ] || { echo "pytest passed only ${passed:-0} tests (expected at least 90)" >&2; exit 1; }

step "Python package: pip install ./Sources/python, then the library from APPLEPAY_LIBRARY and from beside the package"
site=$work/site
# From a copy, so the build leaves nothing in the checkout; without build isolation when setuptools and
# wheel are installed already (Debian's python3-pip brings them), which saves fetching them from PyPI.
cp -r Sources/python "$work/python-package"
isolation=()
python3 -c 'import setuptools, wheel' 2>/dev/null && isolation=(--no-build-isolation)
PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip install -q --root-user-action=ignore --no-warn-script-location "${isolation[@]}" --target "$site" "$work/python-package"
# The installed copy (not the checkout's) is imported, and it finds the library only where it is told to.
(cd "$work" && PYTHONPATH=$site APPLEPAY_LIBRARY=$root/$lib python3 -c '
import applepay, sys
assert applepay.__file__.startswith(sys.argv[1]), applepay.__file__
assert applepay.version() == applepay.ABI_VERSION
print("installed package:", applepay.__file__, "library:", applepay.library_path())' "$site")
cp "$lib" "$site/applepay/"
(cd "$work" && env -u APPLEPAY_LIBRARY PYTHONPATH=$site python3 -c '
import applepay, os, sys
assert applepay.library_path() == os.path.join(sys.argv[1], "applepay", "libapplepay.so"), applepay.library_path()
print("library beside the package:", applepay.library_path())' "$site")

step "Go (cgo) tests"
command -v go >/dev/null || { echo "go is missing: apt-get install -y golang-go" >&2; exit 1; }
# The binding's `#cgo pkg-config: applepay` finds the checkout's release build through
# Sources/ApplePayC/applepay-uninstalled.pc (.ci/dist-check runs the same tests against the tarball).
# The .pc files carry no run path (issue 43): the test binaries find the library through LD_LIBRARY_PATH.
export PKG_CONFIG_PATH=$root/Sources/ApplePayC${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export LD_LIBRARY_PATH=$root/.build/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# A relative PKG_CONFIG_PATH (the README's hint) gives no run path at all, relative or not.
rel_libs=$(PKG_CONFIG_PATH=Sources/ApplePayC pkg-config --libs applepay)
case "$rel_libs" in *rpath*) echo "applepay-uninstalled.pc gives a run path: $rel_libs" >&2; exit 1;; esac
go_out=$(cd Sources/go && go test -count=1 -v ./... 2>&1) || { printf '%s\n' "$go_out"; exit 1; }
printf '%s\n' "$go_out" | grep -E '^(--- |ok|FAIL)'
go_passed=$(printf '%s\n' "$go_out" | grep -c '^--- PASS' || true)
[ "$go_passed" -ge 16 ] || { echo "go test passed only $go_passed tests (expected at least 16)" >&2; exit 1; }

step "The examples of the C ABI article (CABI.md quotes these files and these commands; .ci/check-docs checks it)"
# Tests/CABI/c/example.c, Tests/CABI/python/example.py and Sources/go/example/main.go (go run ./example):
examples() {
    cc -I Sources/ApplePayC/include Tests/CABI/c/example.c -L .build/release -lapplepay -Wl,-rpath,$PWD/.build/release -o /tmp/applepay-example && /tmp/applepay-example
    PYTHONPATH=Sources/python python3 Tests/CABI/python/example.py
    (export PKG_CONFIG_PATH=$PWD/Sources/ApplePayC LD_LIBRARY_PATH=$PWD/.build/release; cd Sources/go && go run ./example)
}
example_out=$(examples)
rm -f /tmp/applepay-example
printf '%s\n' "$example_out" | cut -c1-100
[ "$(printf '%s\n' "$example_out" | grep -c '^ok [0-9a-f]')" -eq 3 ] || { echo "an example did not decrypt" >&2; exit 1; }
[ "$(printf '%s\n' "$example_out" | grep -cE '^invalid(Argument|Handle)$')" -eq 3 ] || { echo "an example's wrong call was not an error code" >&2; exit 1; }

step "C ABI tests passed"
