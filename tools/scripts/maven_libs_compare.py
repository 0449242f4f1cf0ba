#!/usr/bin/env python3
"""Figures of tools/scripts/maven-libs-compare.sh: per JNI library of testdata/mavenlibs, how
jfr-native's symbolized recording and async-profiler's recording name its frames and keep the
Java stacks of the calls into it.

  maven_libs_compare.py measure JFR_TOOL KIND FILE OUT.json [RAW BUILD]   one recording -> its figures
  maven_libs_compare.py report RESULTS_DIR                    medians over the runs, side by side

KIND is `ours` (a jfr-symbolize'd recording of the agent: jdk.CPUTimeSample, native frames named
by the symbolizer) or `ap` (async-profiler's JFR output: jdk.ExecutionSample). Both are read with
the JDK's `jfr print --json`.

A sample reaches library L when one of its frames is L's: for ours, a native frame whose class
(the symbolizer writes the library's file name there) matches L's file name; for
async-profiler, a frame whose class matches (a named frame), or with no class and L's path as
its name (async-profiler's frame for a pc it cannot name). A frame is named when it has a
function name: not the symbolizer's `0xOFFSET` or `symbol+0xOFFSET`, not async-profiler's
library path. A Java-thread sample has a whole Java stack when its bottom frame is
java.lang.Thread.run (the workload's threads) or NativeLibs.main.

With RAW (the agent's own recording) and BUILD (the workload's build directory), ours also gets
what an independent reader could name: each library's file taken from its jar (MAVENLIBS_CP; our
own library from BUILD) and read with `nm -S` (.symtab and .dynsym) and `nm -D -S` (.dynsym
alone); a sample reaching the library (one of its raw pcs in the library's `jdk.NativeLibrary`
range) is nameable when every such pc (the leaf as it is, the others less 1) lies in a sized
function symbol. `nameable` uses both tables, `dynsym` only the dynamic one: what a reader of the
loaded image alone (no file) could name.
"""

import json
import os
import re
import statistics
import subprocess
import sys
from collections import Counter

# key -> (jar file-name pattern, member pattern in the jar)
JAR_MEMBERS = {
    "snappy": (r"^snappy-java-", r"native/Linux/x86_64/libsnappyjava\.so$"),
    "lz4": (r"^lz4-java-", r"linux/amd64/liblz4-java\.so$"),
    "sqlite": (r"^sqlite-jdbc-", r"native/Linux/x86_64/libsqlitejdbc\.so$"),
    "zstd": (r"^zstd-jni-", r"^linux/amd64/libzstd-jni.*\.so$"),
    "tcnative": (r"^netty-tcnative-boringssl-static-.*linux-x86_64", r"libnetty_tcnative_linux_x86_64\.so$"),
    "jna": (r"^jna-\d", r"linux-x86-64/libjnidispatch\.so$"),
}

# (key, file-name pattern, what it is)
LIBRARIES = [
    ("snappy", r"libsnappyjava\.so", "snappy-java, deleted at exit"),
    ("lz4", r"liblz4-java", "lz4-java, deleted at exit"),
    ("sqlite", r"libsqlitejdbc\.so", "sqlite-jdbc, deleted at exit"),
    ("zstd", r"libzstd-jni", "zstd-jni, deleted at load"),
    ("tcnative", r"libnetty_tcnative", "netty-tcnative-boringssl-static, deleted at load"),
    ("jna", r"jna\d+\.tmp", "JNA's libjnidispatch, deleted at load"),
    ("critical", r"libcritical-", "our FFM critical downcall, deleted at load"),
]

UNNAMED_OURS = re.compile(r"^0x[0-9a-f]+$|\+0x[0-9a-f]+$")


def library_of(frame, kind):
    """The key of the library a native frame belongs to, or None."""
    cls = frame["class"]
    candidates = [cls]
    if kind == "ap" and cls == "":
        candidates.append(frame["method"])
    for key, pattern, _ in LIBRARIES:
        if any(re.search(pattern, c) for c in candidates):
            return key
    return None


def named(frame, kind):
    if kind == "ours":
        return not UNNAMED_OURS.search(frame["method"])
    return frame["class"] != "" and "+0x" not in frame["method"]


def short_library(cls):
    """A library's file name without the loaders' random parts, for the top functions."""
    for key, pattern, _ in LIBRARIES:
        if re.search(pattern, cls):
            return key
    return re.sub(r" \(deleted\)$", "", cls)


def read_samples(jfr, kind, path):
    event = "jdk.CPUTimeSample" if kind == "ours" else "jdk.ExecutionSample"
    out = subprocess.run(
        [jfr, "print", "--json", "--stack-depth", "512", "--events", event, path],
        check=True, capture_output=True).stdout
    samples = []
    for e in json.loads(out)["recording"]["events"]:
        v = e["values"]
        thread = v.get("eventThread") or v.get("sampledThread") or {}
        frames = []
        for f in (v.get("stackTrace") or {}).get("frames") or []:
            m = f.get("method") or {}
            t = m.get("type") or {}
            native = f.get("type") in ("Native", "C++", "Kernel") and not t.get("package")
            if kind == "ours":
                native = native and m.get("descriptor") == "()V" and m.get("modifiers") == 256
            frames.append({"class": t.get("name") or "", "method": m.get("name") or "",
                           "native": native})
        samples.append({
            "thread": thread.get("javaName") or thread.get("osName") or "?",
            "java": bool(thread.get("javaName")) and (thread.get("javaThreadId") or 0) > 0,
            "frames": frames,
        })
    return samples


def whole(sample):
    if not sample["frames"]:
        return False
    bottom = sample["frames"][-1]
    return (bottom["class"], bottom["method"]) in (
        ("java/lang/Thread", "run"), ("java.lang.Thread", "run"), ("NativeLibs", "main"))


def measure(samples, kind):
    figures = {}
    for key, _, _ in LIBRARIES:
        for side in ("java", "native"):
            f = {"threads": 0, "reach": 0, "all_named": 0, "inner_named": 0, "whole": 0}
            figures[f"{key}/{side}"] = f
    threads = Counter()
    top = Counter()
    for s in samples:
        threads[s["thread"]] += 1
        side = "java" if s["java"] else "native"
        natives = [f for f in s["frames"] if f["native"]]
        if s["frames"] and s["frames"][0]["native"]:
            leaf = s["frames"][0]
            name = leaf["method"] if named(leaf, kind) else "(unnamed)"
            lib = short_library(leaf["class"] or leaf["method"])
            top[f"{name} [{lib}]"] += 1
        by_lib = {}
        for f in natives:
            key = library_of(f, kind)
            if key:
                by_lib.setdefault(key, []).append(f)
        for key, frames in by_lib.items():
            f = figures[f"{key}/{side}"]
            f["reach"] += 1
            f["all_named"] += all(named(x, kind) for x in frames)
            f["inner_named"] += named(frames[0], kind)
            f["whole"] += side == "java" and whole(s)
    return {"samples": len(samples), "threads": dict(threads), "libraries": figures,
            "top": top.most_common(40)}


def extracted(build):
    """key -> the library file, taken from its jar into BUILD/libs (our own: BUILD)."""
    files = {"critical": os.path.join(build, "libcritical.so")}
    os.makedirs(os.path.join(build, "libs"), exist_ok=True)
    jars = os.environ.get("MAVENLIBS_CP", "").split(":")
    for key, (jar_pattern, member_pattern) in JAR_MEMBERS.items():
        jar = next((j for j in jars if re.search(jar_pattern, os.path.basename(j))), None)
        if not jar:
            continue
        listing = subprocess.run(["unzip", "-Z1", jar], check=True, capture_output=True,
                                 text=True).stdout.split()
        member = next(m for m in listing if re.search(member_pattern, m))
        path = os.path.join(build, "libs", key + ".so")
        if not os.path.exists(path):
            with open(path, "wb") as f:
                subprocess.run(["unzip", "-p", jar, member], check=True, stdout=f)
        files[key] = path
    return files


def nm_functions(path, dynamic):
    """(start, end) of every sized function symbol of `path`, sorted."""
    args = ["nm", "-S", "--defined-only"] + (["-D"] if dynamic else []) + [path]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    ranges = []
    for line in out.splitlines():
        w = line.split()
        if len(w) >= 4 and w[2] in "tTwWiI":
            start = int(w[0], 16)
            ranges.append((start, start + int(w[1], 16)))
    return sorted(ranges)


def covered(ranges, address):
    return any(s <= address < e for s, e in ranges)


def nameable(jfr, raw, build, figures):
    """Adds `nameable` and `dynsym` counts to ours' figures (see the module's doc)."""
    out = subprocess.run([jfr, "print", "--json", "--stack-depth", "1", "--events",
                          "jdk.CPUTimeSample,jdk.NativeLibrary", raw],
                         check=True, capture_output=True).stdout
    events = json.loads(out)["recording"]["events"]
    files = extracted(build)
    tables = {k: (nm_functions(f, False) + nm_functions(f, True), nm_functions(f, True))
              for k, f in files.items()}
    ranges = []
    for e in events:
        if e["type"] == "jdk.NativeLibrary":
            v = e["values"]
            key = next((k for k, pat, _ in LIBRARIES if re.search(pat, v["name"])), None)
            if key:
                ranges.append((v["baseAddress"], v["topAddress"], v["fileOffset"], key))
    for key in files:
        for side in ("java", "native"):
            figures[f"{key}/{side}"].update({"raw_reach": 0, "nameable": 0, "dynsym": 0})
    for e in events:
        if e["type"] != "jdk.CPUTimeSample":
            continue
        v = e["values"]
        thread = v.get("eventThread") or {}
        side = "java" if (thread.get("javaThreadId") or 0) > 0 else "native"
        pcs = [f["pc"] for f in ((v.get("nativeStackTrace") or {}).get("frames") or [])]
        by_lib = {}
        for i, pc in enumerate(pcs):
            for base, top, offset, key in ranges:
                if base <= pc < top:
                    by_lib.setdefault(key, []).append(pc - base + offset - (1 if i else 0))
                    break
        for key, addresses in by_lib.items():
            if key not in tables:
                continue
            f = figures[f"{key}/{side}"]
            f["raw_reach"] += 1
            f["nameable"] += all(covered(tables[key][0], a) for a in addresses)
            f["dynsym"] += all(covered(tables[key][1], a) for a in addresses)


def share(n, d):
    return n / d if d else float("nan")


def report(results):
    runs = []
    for root, _, files in os.walk(results):
        for name in files:
            if name == "figures.json":
                path = os.path.join(root, name)
                rel = os.path.relpath(path, results).split(os.sep)
                with open(path) as f:
                    runs.append((rel[0], rel[2], json.load(f)))
    jdks = sorted({r[0] for r in runs})
    profilers = sorted({r[1] for r in runs}, key=lambda p: (p != "ours", p))
    for jdk in jdks:
        print(f"\n=== {jdk}: medians over runs (each run's figures in {results}/{jdk}/*/)")
        header = f"{'library':<22}{'profiler':<12}{'runs':>5}{'reach':>8}{'all named':>11}" \
                 f"{'inner named':>13}{'whole Java':>12}"
        print(header)
        for key, _, what in LIBRARIES:
            for side in ("java", "native"):
                if all(r[2]["libraries"][f"{key}/{side}"]["reach"] == 0
                       for r in runs if r[0] == jdk):
                    continue
                for p in profilers:
                    figs = [r[2]["libraries"][f"{key}/{side}"]
                            for r in runs if r[0] == jdk and r[1] == p]
                    if not figs:
                        continue
                    med = lambda k, d: statistics.median(share(f[k], f[d]) for f in figs)
                    reach = statistics.median(f["reach"] for f in figs)
                    whole_txt = f"{med('whole', 'reach'):>12.3f}" if side == "java" else \
                        f"{'-':>12}"
                    label = key + (" (own threads)" if side == "native" else "")
                    per_run = " ".join(f"{share(f['all_named'], f['reach']):.3f}" for f in figs)
                    if "nameable" in figs[0]:
                        per_run += "; nameable by nm {:.3f}, by .dynsym alone {:.3f}".format(
                            med("nameable", "raw_reach"), med("dynsym", "raw_reach"))
                    print(f"{label:<22}{p:<12}{len(figs):>5}{reach:>8.0f}"
                          f"{med('all_named', 'reach'):>11.3f}{med('inner_named', 'reach'):>13.3f}"
                          f"{whole_txt}   all named per run: {per_run}")
        top_functions(jdk, profilers, runs)


def top_functions(jdk, profilers, runs):
    """Each profiler's top 10 leaf native functions, side by side: share of all samples over
    every run (a function outside a run's top 40 counts 0 there)."""
    columns = []
    for p in profilers:
        mine = [r[2] for r in runs if r[0] == jdk and r[1] == p]
        total = sum(r["samples"] for r in mine)
        counts = Counter()
        for r in mine:
            for name, n in r["top"]:
                counts[name] += n
        columns.append([f"{100 * n / total:5.1f}% {name}"[:58] for name, n in
                        counts.most_common(10)])
    print(f"\n{jdk}: top 10 native functions (leaf frame; share of all samples, all runs)")
    print("".join(f"{p:<60}" for p in profilers))
    for row in range(10):
        print("".join(f"{(c[row] if row < len(c) else ''):<60}" for c in columns).rstrip())


def main():
    if sys.argv[1] == "measure":
        jfr, kind, path, out = sys.argv[2:6]
        figures = measure(read_samples(jfr, kind, path), kind)
        if len(sys.argv) > 7:
            nameable(jfr, sys.argv[6], sys.argv[7], figures["libraries"])
        with open(out, "w") as f:
            json.dump(figures, f, indent=1)
    elif sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
