"""Runs the slow-path fixtures (testdata/boundaries: AllocStorm under G1 and generational ZGC,
MonitorContention in C1 code only) once per profiler -- jfr-native, async-profiler (from Maven
Central, set up by setup.sh) and, on JDK 25, the JDK's own CPU-time sampler -- and prints for
each the share of the worker threads' samples whose Java stack is whole: it reaches
`Thread.run` and is not marked truncated (async-profiler: the collapsed stack starts at
`Thread.run` under the thread's name). Every sample counts, start-up included.

Usage: python3 slow_paths_compare.py SECONDS INTERVAL (tools/scripts/slow-paths-compare.sh)."""

import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(REPO, "target/release/libjfrnative.so")
AP = os.environ["ASYNC_PROFILER_LIB"]
JDKS = {21: os.environ.get("JDK21_HOME"), 25: os.environ["JDK25_HOME"]}
CASES = [
    ("AllocStorm", "G1", ["-XX:+UseG1GC", "-Xmx256m"], ["alloc-0", "alloc-1"]),
    ("AllocStorm", "generational ZGC", ["-XX:+UseZGC", "-Xmx256m"], ["alloc-0", "alloc-1"]),
    ("MonitorContention", "C1 only", ["-XX:TieredStopAtLevel=1"],
     ["monitor-0", "monitor-1", "monitor-2"]),
]


def java_stacks(jdk, path, threads):
    """(whole, all) of the samples of `threads` in a JFR file's jdk.CPUTimeSample events."""
    out = subprocess.run([os.path.join(jdk, "bin/jfr"), "print", "--json", "--stack-depth",
                          "4096", "--events", "jdk.CPUTimeSample", path],
                         check=True, capture_output=True, text=True).stdout
    whole = total = 0
    for e in json.loads(out)["recording"]["events"]:
        v = e["values"]
        thread = (v.get("eventThread") or {}).get("javaName")
        if thread not in threads:
            continue
        total += 1
        trace = v.get("stackTrace")
        if not trace or trace["truncated"] or not trace["frames"]:
            continue
        last = trace["frames"][-1]["method"]
        whole += (last["type"]["name"], last["name"]) == ("java/lang/Thread", "run")
    return whole, total


def collapsed_stacks(path, threads):
    whole = total = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            name = frames[0].strip("[]").split(" tid=")[0]
            if name not in threads:
                continue
            total += int(count)
            if len(frames) > 1 and frames[1] == "java/lang/Thread.run":
                whole += int(count)
    return whole, total


def run(jdk, classes, options, program, profiler, interval, out):
    cmd = [os.path.join(jdk, "bin/java")] + options
    if profiler == "jfr-native":
        cmd.append(f"-agentpath:{AGENT}=file={out},interval={interval}")
    elif profiler == "async-profiler":
        cmd.append(f"-agentpath:{AP}=start,event=cpu,interval={interval},threads,"
                   f"collapsed,file={out}")
    else:
        cmd.append(f"-XX:StartFlightRecording:jdk.CPUTimeSample#enabled=true,"
                   f"jdk.CPUTimeSample#throttle={interval},filename={out}")
        cmd.append("-XX:FlightRecorderOptions:stackdepth=512")
    cmd += ["-cp", classes] + program
    subprocess.run(cmd, check=True, capture_output=True)


def main():
    seconds, interval = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="jfrnative-slowpaths-")
    classes = os.path.join(work, "classes")
    sources = [os.path.join(REPO, "testdata/boundaries", f"{c}.java")
               for c in ("AllocStorm", "MonitorContention")]
    subprocess.run([os.path.join(JDKS[25], "bin/javac"), "--release", "17", "-d", classes]
                   + sources, check=True)
    print(f"interval {interval}, {seconds} s per run, every sample from the start; files in {work}")
    print("| case | JDK | jfr-native | async-profiler | JDK sampler |")
    print("|---|---|---|---|---|")
    for major, jdk in JDKS.items():
        if not jdk:
            continue
        for name, label, options, threads in CASES:
            program = [name, seconds] + (["2"] if name == "AllocStorm" else [])
            if "-XX:+UseZGC" in options and major < 23:
                options = options + ["-XX:+ZGenerational"]
            row = []
            for profiler in ("jfr-native", "async-profiler", "jdk"):
                if profiler == "jdk" and major < 25:
                    row.append("-")
                    continue
                out = os.path.join(work, f"{name}-{label.replace(' ', '-')}-{major}-{profiler}"
                                   + (".txt" if profiler == "async-profiler" else ".jfr"))
                run(jdk, classes, options, program, profiler, interval, out)
                if profiler == "async-profiler":
                    w, t = collapsed_stacks(out, threads)
                else:
                    w, t = java_stacks(JDKS[25], out, threads)
                row.append(f"{w / max(t, 1):.3f} ({w}/{t})")
            print(f"| {name} {label} | {major} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
