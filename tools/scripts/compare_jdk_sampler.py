#!/usr/bin/env python3
"""Compares jfr-native's Java profile with the JDK's own CPU-time sampler on the same run.

Usage: compare_jdk_sampler.py [--jfr PATH] [--thread NAME] [--top N] OURS.jfr JDK.jfr

Both files are read with the JDK's `jfr print --json` (jdk.CPUTimeSample). For each file, the
share of CPU (sum of samplingPeriod) of each Java method on top of the Java stack (self time) is
taken over the samples that have a Java stack. Prints the top N methods of the JDK's profile
with both shares and their difference in percentage points (with --unbiased, the JDK's
samples taken at a later safepoint, flagged `biased`, are left out), then the failure rate of each file
(samples without a Java stack) and the largest difference as `MAX_DIFF_PP x`.
Exit status 0; the caller decides what difference is acceptable.
"""
import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict


def duration_ns(text):
    """ISO-8601 `PT0.001S` / `PT1M2.5S` durations as `jfr print --json` writes them."""
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", text)
    if not m:
        raise ValueError(f"not a duration: {text}")
    h, mi, s = m.groups()
    return int(((int(h or 0) * 60 + int(mi or 0)) * 60 + float(s or 0)) * 1e9)


def profile(jfr, path, thread, unbiased_only=False):
    out = subprocess.run(
        [jfr, "print", "--json", "--stack-depth", "1", "--events", "jdk.CPUTimeSample", path],
        check=True, capture_output=True, text=True).stdout
    events = json.loads(out)["recording"]["events"]
    shares = defaultdict(int)
    total = with_stack = samples = without = 0
    for e in events:
        v = e["values"]
        if thread and (v.get("eventThread") or {}).get("javaName") != thread:
            continue
        if unbiased_only and v.get("biased"):
            continue
        weight = duration_ns(v["samplingPeriod"])
        samples += 1
        total += weight
        frames = (v.get("stackTrace") or {}).get("frames") or []
        if not frames:
            without += 1
            continue
        m = frames[0]["method"]
        shares[f"{m['type']['name'].replace('/', '.')}.{m['name']}"] += weight
        with_stack += weight
    return {k: 100.0 * w / with_stack for k, w in shares.items()} if with_stack else {}, samples, without


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jfr", default="jfr")
    ap.add_argument("--thread")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--unbiased", action="store_true",
                    help="leave out the JDK's safepoint-biased samples (its `biased` field)")
    ap.add_argument("ours")
    ap.add_argument("jdk")
    a = ap.parse_args()
    ours, n_ours, failed_ours = profile(a.jfr, a.ours, a.thread)
    jdk, n_jdk, failed_jdk = profile(a.jfr, a.jdk, a.thread, a.unbiased)
    top = sorted(jdk, key=jdk.get, reverse=True)[: a.top]
    print(f"{'method':<70} {'jdk %':>7} {'ours %':>7} {'diff pp':>8}")
    worst = 0.0
    for m in top:
        d = ours.get(m, 0.0) - jdk[m]
        worst = max(worst, abs(d))
        print(f"{m[-70:]:<70} {jdk[m]:7.2f} {ours.get(m, 0.0):7.2f} {d:+8.2f}")
    print(f"SAMPLES_OURS {n_ours} WITHOUT_JAVA_STACK {failed_ours}")
    print(f"SAMPLES_JDK {n_jdk} WITHOUT_JAVA_STACK {failed_jdk}")
    print(f"MAX_DIFF_PP {worst:.2f}")


if __name__ == "__main__":
    sys.exit(main())
