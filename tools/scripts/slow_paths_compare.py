"""Runs the slow-path fixtures (testdata/boundaries: AllocStorm under G1 and generational ZGC,
MonitorContention in C1 code only; javac compiling java.util.concurrent at 1 ms) once per
profiler -- jfr-native, async-profiler (from Maven Central, set up by setup.sh) and, on JDK 25,
the JDK's own CPU-time sampler -- and prints for each the share of the measured threads'
samples whose Java stack is whole: it reaches the thread's root (`Thread.run`; javac's
`Main.main`, or the launcher loading it) and is not marked truncated (async-profiler: the
collapsed stack starts at that root under the thread's name). Every sample counts, start-up
included.

A second table: testdata/vmstubs (StringBuilder.delete on a 1 MB builder, megamorphic virtual
and interface calls), the share of each thread's samples whose top frame is the JVM stub its
time goes into (arraycopy, `vtable stub`, `itable stub`): jfr-native's symbolized file
against async-profiler's collapsed stacks. The JDK's sampler has no native frames: it cannot
show a stub.

Usage: python3 slow_paths_compare.py SECONDS INTERVAL (tools/scripts/slow-paths-compare.sh)."""

import json
import os
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(REPO, "target/release/libjfrnative.so")
SYMBOLIZE = os.path.join(REPO, "target/release/jfr-symbolize")
AP = os.environ["ASYNC_PROFILER_LIB"]
JDKS = {21: os.environ.get("JDK21_HOME"), 25: os.environ["JDK25_HOME"]}
THREAD_ROOTS = [("java/lang/Thread", "run")]
CASES = [
    ("AllocStorm", "G1", ["-XX:+UseG1GC", "-Xmx256m"], ["alloc-0", "alloc-1"]),
    ("AllocStorm", "generational ZGC", ["-XX:+UseZGC", "-Xmx256m"], ["alloc-0", "alloc-1"]),
    ("MonitorContention", "C1 only", ["-XX:TieredStopAtLevel=1"],
     ["monitor-0", "monitor-1", "monitor-2"]),
]
# javac's main thread: its root is Main.main, or the launcher's own Java code loading it.
JAVAC_ROOTS = [("com/sun/tools/javac/Main", "main"), ("sun/launcher/LauncherHelper", None)]
JAVAC_GCS = [("G1", ["-XX:+UseG1GC"]), ("generational ZGC", ["-XX:+UseZGC"])]
# VmStubs' threads and the stub each one's time goes into, as both name it.
STUBS = [("delete", "arraycopy"), ("vcalls", "vtable stub"), ("icalls", "itable stub")]
# Native frames a thread's stack starts from.
THREAD_STARTS = ("start_thread", "clone", "clone3", "__clone3", "JavaMain", "ThreadJavaMain")
# async-profiler's annotations of Java frames (`ann`): JIT-compiled, inlined, interpreted, C1.
AP_JAVA = ("_[j]", "_[i]", "_[0]", "_[1]")


def is_root(frame, roots):
    """Whether a (class, method) pair is one of `roots` (a method of None: any)."""
    return any(frame[0] == c and m in (None, frame[1]) for c, m in roots)


def cpu_samples(jdk, path):
    """The jdk.CPUTimeSample events of a JFR file, as `jfr print --json` reads them."""
    out = subprocess.run([os.path.join(jdk, "bin/jfr"), "print", "--json", "--stack-depth",
                          "4096", "--events", "jdk.CPUTimeSample", path],
                         check=True, capture_output=True, text=True).stdout
    return [e["values"] for e in json.loads(out)["recording"]["events"]]


def java_stacks(jdk, path, threads, roots):
    """(whole, all) of the samples of `threads` in a JFR file's jdk.CPUTimeSample events: whole
    when not truncated and the last frame is a root, or when there is no Java frame at all (the
    JVM starting the thread, before its Java code)."""
    whole = total = 0
    for v in cpu_samples(jdk, path):
        thread = (v.get("eventThread") or {}).get("javaName")
        if thread not in threads:
            continue
        total += 1
        trace = v.get("stackTrace")
        if not trace or trace["truncated"]:
            continue
        if not trace["frames"]:
            whole += 1
            continue
        last = trace["frames"][-1]["method"]
        whole += is_root((last["type"]["name"], last["name"]), roots)
    return whole, total


def collapsed(path, threads):
    """(frames from the root, count) of each line of async-profiler's collapsed output (with
    `threads,ann`) for one of `threads`."""
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if frames[0].strip("[]").split(" tid=")[0] in threads:
                yield frames[1:], int(count)


def collapsed_stacks(path, threads, roots):
    """(whole, all) as java_stacks counts them: the root frame is one of `roots`; or no Java
    frame, rooted where a thread starts (a stack of a Java thread's stub or libjvm code with
    nothing below it is one whose Java frames async-profiler lost)."""
    whole = total = 0
    for frames, count in collapsed(path, threads):
        total += count
        java = [f for f in frames if f.endswith(AP_JAVA)]
        if java:
            cls, _, method = java[0][:-4].rpartition(".")
            whole += count * (java[0] == frames[0] and is_root((cls, method), roots))
        elif frames and frames[0] in THREAD_STARTS:
            whole += count
    return whole, total


def stub_shares(profiler, path):
    """{thread: (samples whose top frame is the thread's stub, all)} of a VmStubs run."""
    shares = {}
    for thread, stub in STUBS:
        hit = total = 0
        if profiler == "async-profiler":
            for frames, count in collapsed(path, [thread]):
                total += count
                hit += count * bool(frames and stub in frames[-1])
        else:
            for v in cpu_samples(JDKS[25], path):
                if (v.get("eventThread") or {}).get("javaName") != thread:
                    continue
                total += 1
                frames = (v.get("stackTrace") or {}).get("frames") or []
                top = frames[0]["method"] if frames else None
                hit += bool(top and top["type"]["name"] == "jvm-generated"
                            and stub in top["name"])
        shares[thread] = (hit, total)
    return shares


def run(jdk, classes, options, program, profiler, interval, out):
    cmd = [os.path.join(jdk, "bin/java")] + options
    if profiler == "jfr-native":
        cmd.append(f"-agentpath:{AGENT}=file={out},interval={interval}")
    elif profiler == "async-profiler":
        cmd.append(f"-agentpath:{AP}=start,event=cpu,interval={interval},threads,"
                   f"collapsed,ann,file={out}")
    else:
        cmd.append(f"-XX:StartFlightRecording:jdk.CPUTimeSample#enabled=true,"
                   f"jdk.CPUTimeSample#throttle={interval},filename={out}")
        cmd.append("-XX:FlightRecorderOptions:stackdepth=512")
    cmd += ["-cp", classes] + program
    subprocess.run(cmd, check=True, capture_output=True)


def javac_program(jdk, work):
    """javac compiling java.util.concurrent from `jdk`'s src.zip (None without one)."""
    zip_path = os.path.join(jdk, "lib/src.zip")
    if not os.path.exists(zip_path) or not os.path.exists(os.path.join(jdk, "bin/javac")):
        return None
    src = os.path.join(work, "javac-src")
    with zipfile.ZipFile(zip_path) as z:
        members = [n for n in z.namelist()
                   if n.startswith("java.base/java/util/concurrent/") and n.endswith(".java")
                   and n.count("/") == 4]
        z.extractall(src, members)
    return src, ["com.sun.tools.javac.Main", "--patch-module", f"java.base={src}/java.base",
                 "-d", os.path.join(work, "javac-out")] + [os.path.join(src, m)
                                                           for m in sorted(members)]


def whole_rows(work, classes, seconds, interval):
    """The rows of the first table: (case, JDK, classpath, options, program, threads, roots,
    interval) per run."""
    for major, jdk in JDKS.items():
        if not jdk:
            continue
        for name, label, options, threads in CASES:
            program = [name, seconds] + (["2"] if name == "AllocStorm" else [])
            if "-XX:+UseZGC" in options and major < 23:
                options = options + ["-XX:+ZGenerational"]
            yield (f"{name} {label}", major, jdk, classes, options, program, threads,
                   THREAD_ROOTS, interval)
        javac = javac_program(jdk, work)
        for label, options in JAVAC_GCS if javac else []:
            if "-XX:+UseZGC" in options and major < 23:
                options = options + ["-XX:+ZGenerational"]
            yield (f"javac {label}, 1 ms", major, jdk, javac[0], options, javac[1], ["main"],
                   JAVAC_ROOTS, "1ms")


def main():
    seconds, interval = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="jfrnative-slowpaths-")
    classes = os.path.join(work, "classes")
    sources = [os.path.join(REPO, "testdata/boundaries", f"{c}.java")
               for c in ("AllocStorm", "MonitorContention")]
    sources.append(os.path.join(REPO, "testdata/vmstubs/VmStubs.java"))
    subprocess.run([os.path.join(JDKS[25], "bin/javac"), "--release", "17", "-d", classes]
                   + sources, check=True)
    print(f"interval {interval}, {seconds} s per run, every sample from the start; files in {work}")
    print("| case | JDK | jfr-native | async-profiler | JDK sampler |")
    print("|---|---|---|---|---|")
    for case, major, jdk, cp, options, program, threads, roots, every in whole_rows(
            work, classes, seconds, interval):
        row = []
        for profiler in ("jfr-native", "async-profiler", "jdk"):
            if profiler == "jdk" and major < 25:
                row.append("-")
                continue
            out = os.path.join(work, f"{case.replace(' ', '-').replace(',', '')}-{major}-"
                               f"{profiler}" + (".txt" if profiler == "async-profiler" else ".jfr"))
            run(jdk, cp, options, program, profiler, every, out)
            if profiler == "async-profiler":
                w, t = collapsed_stacks(out, threads, roots)
            else:
                w, t = java_stacks(JDKS[25], out, threads, roots)
            row.append(f"{w / max(t, 1):.3f} ({w}/{t})")
        print(f"| {case} | {major} | " + " | ".join(row) + " |", flush=True)

    print()
    print("Samples whose top frame is the JVM stub the thread's time goes into "
          "(testdata/vmstubs, G1):")
    print("| thread: stub | JDK | jfr-native | async-profiler |")
    print("|---|---|---|---|")
    for major, jdk in JDKS.items():
        if not jdk:
            continue
        found = {}
        for profiler in ("jfr-native", "async-profiler"):
            out = os.path.join(work, f"VmStubs-{major}-{profiler}"
                               + (".txt" if profiler == "async-profiler" else ".jfr"))
            run(jdk, classes, ["-XX:+UseG1GC"], ["VmStubs", seconds], profiler, interval, out)
            if profiler == "jfr-native":
                symbolized = out.replace(".jfr", "-symbolized.jfr")
                subprocess.run([SYMBOLIZE, out, "-o", symbolized], check=True,
                               capture_output=True)
                out = symbolized
            found[profiler] = stub_shares(profiler, out)
        for thread, stub in STUBS:
            cells = [f"{h / max(t, 1):.3f} ({h}/{t})"
                     for h, t in (found[p][thread] for p in ("jfr-native", "async-profiler"))]
            print(f"| {thread}: {stub} | {major} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
