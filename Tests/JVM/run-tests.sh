#!/usr/bin/env bash
# The JVM binding's tests: builds the JNI shim and runs Maven offline against Debian's repository
# (Sources/java/build.sh: the JUnit 5 suite, then both jars), on the release libapplepay.so the C ABI step
# built, with `mint-tokens google` and `mint-tokens samsung` tokens, the shared Apple, Google and Samsung vectors, the CLI to compare with
# (APPLEPAY_CLI, else .build/debug's, else built here) and a stand-in library of another ABI version for the
# loader's refusal; then the JVM article's example (Tests/JVM/Example.java) against the linux-x86_64 jar
# alone. Exits non-zero on any failure, and when the suite ran fewer tests than it has.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS
step() { printf '\n== %s (%ds)\n' "$1" $((SECONDS - started)); }

for tool in mvn javac gcc; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install -y maven openjdk-17-jdk-headless gcc junit5 libmaven-compiler-plugin-java libsurefire-java libmaven-jar-plugin-java libmaven-resources-plugin-java libmaven-install-plugin-java" >&2; exit 1; }
done
step "libapplepay.so, mint-tokens and the CLI (built where missing)"
lib=.build/release/libapplepay.so
[ -f "$lib" ] || swift build -c release --product applepay
mint=Tests/mint-tokens.sh
cli=${APPLEPAY_CLI:-.build/debug/applepay-decrypt}
[ -x "$cli" ] || { cli=.build/release/applepay-decrypt; [ -x "$cli" ] || swift build -c release --product applepay-decrypt; }
"$mint" google "$work/google-minted" 100 >/dev/null
"$mint" samsung "$work/samsung-minted" 1 >/dev/null
abi=$(sed -n 's/^#define AP_ABI_VERSION \([0-9][0-9]*\).*/\1/p' Sources/ApplePayC/include/applepay.h)
# The loader must refuse a libapplepay of another ABI version: one that says ABI - 1 and has nothing else.
printf '#include <stdint.h>\nuint32_t ap_version(void) { return %d; }\n' $((abi - 1)) >"$work/wrong_abi.c"
gcc -shared -fPIC -o "$work/libapplepay-wrong-abi.so" "$work/wrong_abi.c"

vectors=${APPLEPAY_SHARED_VECTORS:-../shared/vectors/apple}
google_vectors=${APPLEPAY_GOOGLE_VECTORS:-../shared/vectors/google}
samsung_vectors=${APPLEPAY_SAMSUNG_VECTORS:-../shared/vectors/samsung}
step "Maven offline: the JUnit suite and the jars (Sources/java/build.sh)"
export APPLEPAY_CLI=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
export APPLEPAY_SHARED_VECTORS=$(cd "$vectors" && pwd) APPLEPAY_GOOGLE_VECTORS=$(cd "$google_vectors" && pwd)
export APPLEPAY_SAMSUNG_VECTORS=$(cd "$samsung_vectors" && pwd) APPLEPAY_SAMSUNG_MINTED=$work/samsung-minted
export APPLEPAY_GOOGLE_MINTED=$work/google-minted APPLEPAY_WRONG_ABI_LIBRARY=$work/libapplepay-wrong-abi.so
rm -rf Sources/java/target/surefire-reports
Sources/java/build.sh "$lib" package -Dapplepay.library="$root/$lib" || {
  for f in Sources/java/target/surefire-reports/*.txt; do grep -q 'FAILURE' "$f" && cat "$f"; done
  exit 1
}
ran=$(cat Sources/java/target/surefire-reports/TEST-*.xml | sed -n 's/.*<testsuite [^>]*tests="\([0-9]*\)".*/\1/p' | awk '{s += $1} END {print s + 0}')
skipped=$(cat Sources/java/target/surefire-reports/TEST-*.xml | sed -n 's/.*<testsuite [^>]*skipped="\([0-9]*\)".*/\1/p' | awk '{s += $1} END {print s + 0}')
echo "JUnit: $ran tests, $skipped skipped"
[ "$ran" -ge 78 ] && [ "$skipped" -eq 0 ] || { echo "the JVM suite ran $ran tests ($skipped skipped), expected at least 78, none skipped" >&2; exit 1; }
version=$(tr -d ' \n' <.ci/VERSION)
ls -l Sources/java/target/applepay-"$version".jar Sources/java/target/applepay-"$version"-linux-x86_64.jar

step "The JVM article's example (Tests/JVM/Example.java) on the linux-x86_64 jar alone"
example_out=$(java -cp "Sources/java/target/applepay-$version-linux-x86_64.jar" Tests/JVM/Example.java)
printf '%s\n' "$example_out" | cut -c1-120
grep -q '^ok [0-9a-f]\{64\}$' <<<"$example_out" && grep -q '^ok, then replayedTransaction$' <<<"$example_out" \
  && grep -q '^invalidConfiguration$' <<<"$example_out" || { echo "the JVM example did not print what the article says" >&2; exit 1; }
step "JVM binding tests passed"
