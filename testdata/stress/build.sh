#!/usr/bin/env bash
# Builds the stress and parity programs of this directory into OUT:
#   libstress.so          the JNI library (stress.c): dlopen churn, Java -> native -> Java recursion
#   libchurn0..3.so       four copies of churn.c, dlopened and dlclosed by the stress program
#   sigsender             the junk signal sender (sigsender.c)
#   *.class               Stress, Parity, Jni (javac --release 11, so that every JDK from 11 runs them)
# Usage: JAVA_HOME=<a JDK with javac> build.sh OUT
set -euo pipefail
if [[ $# -ne 1 || -z "${JAVA_HOME:-}" ]]; then
    echo "usage: JAVA_HOME=<JDK with javac> $0 OUT" >&2
    exit 2
fi
src=$(cd "$(dirname "$0")" && pwd)
out=$1
mkdir -p "$out"
jni=(-I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux")
cc=(gcc -O2 -g -Wall -Wextra -Werror)
"${cc[@]}" -shared -fPIC "${jni[@]}" "$src/stress.c" -o "$out/libstress.so" -ldl
for copy in 0 1 2 3; do
    "${cc[@]}" -shared -fPIC -DCOPY="$copy" "$src/churn.c" -o "$out/libchurn$copy.so"
done
"${cc[@]}" "$src/sigsender.c" -o "$out/sigsender"
"$JAVA_HOME/bin/javac" --release 11 -Xlint:all -Werror -d "$out" \
    "$src/Stress.java" "$src/Parity.java" "$src/Jni.java"
