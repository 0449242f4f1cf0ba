#!/usr/bin/env python3
"""Figures of tools/scripts/jdk-compare.sh: per JDK and workload, how jfr-native's symbolized
recording and async-profiler's recording see the workload's Java threads.

  jdk_compare.py measure JFR_TOOL KIND CASE FILE OUT.json   one recording -> its figures
  jdk_compare.py report RESULTS_DIR                         medians over the runs, side by side

KIND is `ours` (a jfr-symbolize'd recording of the agent: jdk.CPUTimeSample, native frames then
Java frames; also `ours-dns`, ours under -XX:+DebugNonSafepoints) or `ap` (async-profiler's JFR output: jdk.ExecutionSample). Both are read with the
JDK's `jfr print --json`.

Which samples count: those of the workload's threads (WORKLOAD_THREADS): the main thread for
burn and ecj (async-profiler names it by its name at the end of the recording, DestroyJavaVM:
the launcher's main thread renames itself when main returns), the fixtures' named threads for
jna and the alloc cases.

A frame is native when its type is Native, C++ or Kernel and its method has the shape each
profiler gives native frames: ours `()V` with modifiers 256 (the symbolizer's), async-profiler
`()L;` or `(Lk;)L;`; every other frame is a Java frame. Per run:

  samples  the workload threads' samples
  whole    the share of them whose bottom frame is the thread's entry (ENTRIES: the main class's
           main, java.lang.Thread.run; on main also the launcher's LauncherHelper.checkAndLoadMain,
           which the launcher's C code calls before main: loading and linking the main class)
  typed    the share of their Java frames with a known type: Interpreted, JIT compiled, Inlined,
           async-profiler's C1 compiled, or Native (a Java native method); not Unknown
  self     innermost Java method of each sample (class.method; `(no Java frame)` if none):
           the histogram the agreement and the top 5 come from
  compiled the same with inlining collapsed: the innermost Java frame not of type Inlined (the
           method whose code ran); it tells a missing or different inlined scope apart from a
           sample in another place

The agreement of run i is the histogram intersection of ours' run i with async-profiler's run i:
sum over methods m of min(share_ours(m), share_ap(m)), 1.0 when both put the same share of the
samples in each method. Its baseline is each profiler's agreement with itself: the median of the
intersections between two of its own runs (ours~ours, ap~ap): how far apart two runs of one
profiler are (sampling noise, JIT timing), which is as close as the two profilers can be.
"""

import json
import os
import statistics
import subprocess
import sys
from collections import Counter

# case -> the names of its threads (async-profiler: the names at the end of the recording)
WORKLOAD_THREADS = {
    "burn": ("main", "DestroyJavaVM"),
    "ecj": ("main", "DestroyJavaVM"),
    "jna": ("jna-qsort", "jna-crc32-direct", "jna-crc32-iface", "jna-clinit"),
    "alloc-g1": ("alloc-0", "alloc-1"),
    "alloc-parallel": ("alloc-0", "alloc-1"),
}

# case -> the bottom frames of a whole Java stack
LAUNCHER = ("sun.launcher.LauncherHelper", "checkAndLoadMain")
ENTRIES = {
    "burn": {("Burn", "main"), LAUNCHER},
    # EcjLoop.main runs what Main.main does, in a loop (testdata/jdkmatrix/EcjLoop.java)
    "ecj": {("EcjLoop", "main"), ("org.eclipse.jdt.internal.compiler.batch.Main", "main"),
            LAUNCHER},
    "jna": {("java.lang.Thread", "run")},
    "alloc-g1": {("java.lang.Thread", "run")},
    "alloc-parallel": {("java.lang.Thread", "run")},
}

CASES = list(WORKLOAD_THREADS)
KNOWN_TYPES = ("Interpreted", "JIT compiled", "C1 compiled", "Inlined", "Native")
NATIVE_TYPES = ("Native", "C++", "Kernel")
AP_NATIVE_DESCRIPTORS = ("()L;", "(Lk;)L;")
NO_JAVA = "(no Java frame)"


def is_native(frame, kind):
    if frame["type"] not in NATIVE_TYPES:
        return False
    m = frame["method"]
    if kind != "ap":
        return m.get("descriptor") == "()V" and m.get("modifiers") == 256
    return m.get("descriptor") in AP_NATIVE_DESCRIPTORS


def read_samples(jfr, kind, path, threads):
    """[(thread, [(class, method, type) of the Java frames, innermost first])] of `threads`."""
    event = "jdk.ExecutionSample" if kind == "ap" else "jdk.CPUTimeSample"
    out = subprocess.run(
        [jfr, "print", "--json", "--stack-depth", "4096", "--events", event, path],
        check=True, capture_output=True).stdout
    samples = []
    for e in json.loads(out)["recording"]["events"]:
        v = e["values"]
        thread = v.get("eventThread") or v.get("sampledThread") or {}
        name = thread.get("javaName") or thread.get("osName") or "?"
        if name not in threads:
            continue
        frames = []
        for f in (v.get("stackTrace") or {}).get("frames") or []:
            f = {"type": f.get("type") or "", "method": f.get("method") or {}}
            if is_native(f, kind):
                continue
            m = f["method"]
            cls = ((m.get("type") or {}).get("name") or "?").replace("/", ".")
            frames.append((cls, m.get("name") or "?", f["type"]))
        samples.append((name, frames))
    return samples


def measure(samples, case):
    per_thread = Counter()
    whole = java_frames = typed = 0
    self_time = Counter()
    compiled = Counter()
    for thread, frames in samples:
        per_thread[thread] += 1
        whole += bool(frames) and frames[-1][:2] in ENTRIES[case]
        java_frames += len(frames)
        typed += sum(f[2] in KNOWN_TYPES for f in frames)
        self_time[f"{frames[0][0]}.{frames[0][1]}" if frames else NO_JAVA] += 1
        outer = next((f for f in frames if f[2] != "Inlined"), frames[-1] if frames else None)
        compiled[f"{outer[0]}.{outer[1]}" if outer else NO_JAVA] += 1
    return {"case": case, "samples": len(samples), "threads": dict(per_thread), "whole": whole,
            "java_frames": java_frames, "typed": typed, "self": dict(self_time),
            "compiled": dict(compiled)}


def share(n, d):
    return n / d if d else float("nan")


def intersection(a, b):
    ta, tb = sum(a.values()), sum(b.values())
    if not ta or not tb:
        return float("nan")
    return sum(min(a[m] / ta, b.get(m, 0) / tb) for m in a)


def median(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def load(results):
    """{(jdk, case): {profiler: {run: figures}}} from RESULTS/jdkN/CASE/RUN/PROFILER/figures.json;
    a run whose recording failed has an error.txt there instead."""
    runs = {}
    for root, _, files in os.walk(results):
        rel = os.path.relpath(root, results).split(os.sep)
        if len(rel) != 4:
            continue
        jdk, case, run, profiler = rel
        if "figures.json" in files:
            with open(os.path.join(root, "figures.json")) as f:
                figures = json.load(f)
        elif "error.txt" in files:
            with open(os.path.join(root, "error.txt")) as f:
                figures = {"error": f.read().strip()}
        else:
            continue
        runs.setdefault((jdk, case), {}).setdefault(profiler, {})[run] = figures
    return runs


def summarize(by_profiler):
    """The medians of one (jdk, case): per profiler, each one's agreement with itself, and each
    of ours' (ours, ours-dns) agreement with async-profiler's."""
    out = {"profilers": sorted(by_profiler, key=lambda p: (p == "ap", p))}
    for p in out["profilers"]:
        figs = by_profiler[p]
        good = [figs[r] for r in sorted(figs) if "error" not in figs[r]]
        pooled = Counter()
        for f in good:
            pooled.update(f["self"])
        out[p] = {
            "runs": len(good), "errors": [f["error"] for f in figs.values() if "error" in f],
            "samples": median([f["samples"] for f in good]),
            "whole": median([share(f["whole"], f["samples"]) for f in good]),
            "typed": median([share(f["typed"], f["java_frames"]) for f in good]),
            "pooled": pooled,
            "self_agreement": median([intersection(Counter(a["self"]), Counter(b["self"]))
                                      for i, a in enumerate(good) for b in good[i + 1:]]),
        }
    ap = by_profiler.get("ap", {})
    for p in out["profilers"]:
        if p == "ap":
            continue
        ours = by_profiler[p]
        paired = [r for r in sorted(ours) if r in ap and "error" not in ours[r]
                  and "error" not in ap[r]]
        agreements = [intersection(Counter(ours[r]["self"]), Counter(ap[r]["self"]))
                      for r in paired]
        out[p]["agreement"] = median(agreements)
        out[p]["agreements"] = agreements
        out[p]["compiled_agreement"] = median(
            [intersection(Counter(ours[r]["compiled"]), Counter(ap[r]["compiled"]))
             for r in paired])
        out[p]["pooled_agreement"] = intersection(out[p]["pooled"],
                                                  out["ap"]["pooled"] if "ap" in out else {})
    return out


def fmt(x, width=8, digits=3):
    return f"{'-':>{width}}" if x != x else f"{x:>{width}.{digits}f}"


def top5(pooled):
    total = sum(pooled.values())
    return [f"{100 * n / total:5.1f}% {m}" for m, n in pooled.most_common(5)]


def report(results):
    runs = load(results)
    jdks = sorted({k[0] for k in runs}, key=lambda j: int(j[3:]))
    summary = {}
    nan = float("nan")
    for jdk in jdks:
        print(f"\n=== {jdk}: medians over runs (each run's recordings in {results}/{jdk}/CASE/RUN/)")
        print(f"{'case':<16}{'profiler':<10}{'runs':>5}{'samples':>9}{'whole':>8}{'typed':>8}"
              f"{'agree':>8}   agreement per run; pooled; inlining collapsed; "
              f"between two of its own runs")
        for case in CASES:
            if (jdk, case) not in runs:
                continue
            s = summarize(runs[(jdk, case)])
            summary[(case, jdk)] = s
            for p in s["profilers"]:
                f = s[p]
                tail = f"   {' '.join(fmt(a, 0) for a in f['agreements'])}; " \
                       f"{fmt(f['pooled_agreement'], 0)}; {fmt(f['compiled_agreement'], 0)};" \
                    if p != "ap" else "   " + " " * 25
                tail += f" {fmt(f['self_agreement'], 0)}"
                print(f"{case:<16}{p:<10}{f['runs']:>5}{fmt(f['samples'], 9, 0)}"
                      f"{fmt(f['whole'])}{fmt(f['typed'])}"
                      f"{fmt(f.get('agreement', nan)) if p != 'ap' else '':>8}{tail}")
                for e in f["errors"]:
                    print(f"{'':<16}{p:<10}FAILED: {e}")
            tops = [(p, top5(s[p]["pooled"])) for p in s["profilers"]]
            print(f"{'':<4}top 5 self (innermost Java method; share of all runs' samples):")
            print(f"{'':<4}" + "".join(f"{p:<54}" for p, _ in tops).rstrip())
            for i in range(5):
                row = "".join(f"{(t[i] if i < len(t) else '')[:52]:<54}" for _, t in tops)
                print(f"{'':<4}{row}".rstrip())
    print("\n=== summary: medians over runs (whole: share of samples with a whole Java stack; "
          "typed: share of Java frames with a known type; agreement: self-time histogram "
          "intersection with async-profiler; agr. compiled: the same, inlining collapsed; "
          "ours~ours, AP~AP: each profiler's agreement between two of its own runs)")
    for p in sorted({p for s in summary.values() for p in s["profilers"] if p != "ap"}):
        label = {"ours": "ours", "ours-dns": "dns"}.get(p, p)
        print(f"\n{p} against ap" + ("" if p == "ours" else f" ({label})"))
        print(f"{'case':<16}{'JDK':>4}{label + ' n':>8}{'AP n':>8}{label + ' whole':>12}"
              f"{'AP whole':>10}{label + ' typed':>12}{'AP typed':>10}{'agreement':>11}"
              f"{'agr. compiled':>15}{label + '~' + label:>11}{'AP~AP':>7}")
        for case in CASES:
            for jdk in jdks:
                s = summary.get((case, jdk))
                if not s or p not in s:
                    continue
                ap = s.get("ap") or {"samples": nan, "whole": nan, "typed": nan,
                                     "self_agreement": nan, "errors": ["no runs"]}
                failed = "; ".join(f"{q} {len(x['errors'])} run(s) failed"
                                   for q, x in ((p, s[p]), ("ap", ap)) if x["errors"])
                print(f"{case:<16}{jdk[3:]:>4}{fmt(s[p]['samples'], 8, 0)}"
                      f"{fmt(ap['samples'], 8, 0)}{fmt(s[p]['whole'], 12)}"
                      f"{fmt(ap['whole'], 10)}{fmt(s[p]['typed'], 12)}"
                      f"{fmt(ap['typed'], 10)}{fmt(s[p]['agreement'], 11)}"
                      f"{fmt(s[p]['compiled_agreement'], 15)}{fmt(s[p]['self_agreement'], 11)}"
                      f"{fmt(ap['self_agreement'], 7)}{'  ' + failed if failed else ''}")


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "measure":
        jfr, kind, case, path, out = sys.argv[2:7]
        figures = measure(read_samples(jfr, kind, path, WORKLOAD_THREADS[case]), case)
        with open(out, "w") as f:
            json.dump(figures, f, indent=1)
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
