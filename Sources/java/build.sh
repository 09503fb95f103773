#!/usr/bin/env bash
# Builds the JVM binding: `Sources/java/build.sh LIBAPPLEPAY [MAVEN ARGS...]` compiles the JNI shim
# (src/main/c/applepay_jni.c, gcc against $JAVA_HOME/include; it opens libapplepay at run time, so it links
# only libdl), puts it and LIBAPPLEPAY (as libapplepay.so.N, N = AP_ABI_VERSION) in target/native/, then runs
# Maven offline against Debian's system repository: target/applepay-VERSION.jar (classes) and
# target/applepay-VERSION-linux-x86_64.jar (classes and native code). MAVEN ARGS default to `package`.
# APPLEPAY_JAVA_OUT names another build folder than target/ (.ci/dist builds there while the tests run).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: Sources/java/build.sh LIBAPPLEPAY [MAVEN ARGS...]" >&2; exit 2; }
library=$(readlink -f "$1")
shift
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
abi=$(sed -n 's/^#define AP_ABI_VERSION \([0-9][0-9]*\).*/\1/p' "$root/Sources/ApplePayC/include/applepay.h")
java_abi=$(sed -n 's/.*static final int ABI_VERSION = \([0-9][0-9]*\);.*/\1/p' src/main/java/io/github/applepaydecryption/Native.java)
[ "$abi" = "$java_abi" ] || { echo "build.sh: applepay.h says ABI $abi, Native.java $java_abi" >&2; exit 1; }
version=$(tr -d ' \n' <"$root/.ci/VERSION")
pom_version=$(sed -n '0,/<version>/s/^  <version>\(.*\)<\/version>/\1/p' pom.xml)
[ "$version" = "$pom_version" ] || { echo "build.sh: .ci/VERSION is $version, pom.xml $pom_version" >&2; exit 1; }
java_home=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
out=${APPLEPAY_JAVA_OUT:-$PWD/target}
native=$out/native
rm -rf "$native" "$out/native-jar"
mkdir -p "$native"
gcc -std=gnu11 -O2 -fPIC -shared -Wall -Wextra -Werror -fvisibility=hidden \
  -I "$java_home/include" -I "$java_home/include/linux" -I "$root/Sources/ApplePayC/include" \
  src/main/c/applepay_jni.c -o "$native/libapplepay_jni.so" -ldl -lpthread
install -m 0755 "$library" "$native/libapplepay.so.$abi"
[ $# -gt 0 ] || set -- package
mvn -o -B -q -Dmaven.repo.local=/usr/share/maven-repo -Dapplepay.buildDirectory="$out" "$@"
