#!/usr/bin/env python3
"""Compares jfr-native's Java profile with the JDK's own CPU-time sampler on the same run.

Usage: compare_jdk_sampler.py [--jfr PATH] [--thread NAME] [--top N] OURS.jfr JDK.jfr

Both files are read with the JDK's `jfr print --json` (jdk.CPUTimeSample). For each file, the
share of CPU (sum of samplingPeriod) of each Java method on top of the Java stack (self time) is
taken over the samples that have a Java stack. Hidden frames are skipped on both sides: methods
whose `hidden` field is set in either file (jfr-native sets it for the methods of hidden classes:
lambda proxies, LambdaForms), and methods the JDK's file marks hidden (it also knows the
`@Hidden` methods of ordinary classes, such as `Invokers$Holder.linkToTargetMethod`, which
jfr-native writes as not hidden). Only the samples inside
the time both recordings cover are counted: the JDK's recording starts later (its own start-up
runs on the main thread before its first sample), and the agent's earlier samples have no
counterpart. Prints the top N methods of the JDK's profile
with both shares and their difference in percentage points (with --unbiased, the JDK's
samples taken at a later safepoint, flagged `biased`, are left out), then the failure rate of each file
(samples without a Java stack) and the largest difference as `MAX_DIFF_PP x`.

The JDK's sampler takes a part of its samples (20-30% on JIT-heavy code) at the thread's next
safepoint rather than where the signal found it (`biased`), which moves CPU to methods with a
safepoint poll. So it also compares sample by sample: each JDK sample that is not biased, beside
the agent's sample of the same timer tick; it prints how often the two name the same top method
(`SAME_TICK_TOP_AGREE_PCT`), how often they have the same whole stack, methods and frame types
(`SAME_TICK_STACK_AGREE_PCT`, to a depth of 64), and the largest share difference of a top method over those pairs
(`SAME_TICK_MAX_DIFF_PP`).
Nothing of the JDK's samples is left out or cut before they are compared. Both samplers read
the same debug information: the agent turns on HotSpot's recording of it between safepoints
(its CompiledMethodLoad events, as `-XX:+DebugNonSafepoints`), so an interrupted pc in compiled
code has its own inlined scopes on both sides.
Exit status 0 (1 when a file has no samples of the thread); the caller decides what difference
is acceptable.
"""
import argparse
import bisect
import json
import re
import subprocess
import sys
from collections import defaultdict
from datetime import datetime, timezone

# Largest gap between the JDK's sample and the agent's sample of the same tick (measured
# 5-30 us; a tick is 4 ms at HZ=250).
PAIR_GAP_NS = 500_000
# Frames printed per stack (`jfr print --stack-depth`).
STACK_DEPTH = 64


def duration_ns(text):
    """ISO-8601 `PT0.001S` / `PT1M2.5S` durations as `jfr print --json` writes them."""
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", text)
    if not m:
        raise ValueError(f"not a duration: {text}")
    h, mi, s = m.groups()
    return int(((int(h or 0) * 60 + int(mi or 0)) * 60 + float(s or 0)) * 1e9)


def instant_ns(text):
    """`2026-11-23T20:18:34.015901981Z` (UTC, as `jfr print --json` writes) → ns since 1970."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z", text)
    if not m:
        raise ValueError(f"not a UTC instant: {text}")
    seconds = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return int(seconds.timestamp()) * 10**9 + int((m.group(2) or "0").ljust(9, "0"))


def samples_of(jfr, path, thread):
    """The thread's jdk.CPUTimeSample events of a file, each with its start in ns."""
    out = subprocess.run(
        [jfr, "print", "--json", "--stack-depth", str(STACK_DEPTH), "--events", "jdk.CPUTimeSample", path],
        check=True, capture_output=True, text=True).stdout
    events = []
    for e in json.loads(out)["recording"]["events"]:
        v = e["values"]
        if thread and (v.get("eventThread") or {}).get("javaName") != thread:
            continue
        events.append((instant_ns(v["startTime"]), v))
        for f in (v.get("stackTrace") or {}).get("frames") or []:
            if f["method"].get("hidden"):
                HIDDEN.add(method_name(f))
    events.sort(key=lambda e: e[0])
    return events


def method_name(frame):
    m = frame["method"]
    return f"{m['type']['name'].replace('/', '.')}.{m['name']}"


# Methods either file marks hidden (filled by `samples_of`).
HIDDEN = set()


def visible_frames(v):
    """The sample's Java frames without the hidden ones (see the module comment)."""
    return [f for f in (v.get("stackTrace") or {}).get("frames") or []
            if method_name(f) not in HIDDEN]


def top_method(v):
    """The sample's top visible Java method, or None without a Java stack."""
    frames = visible_frames(v)
    return method_name(frames[0]) if frames else None


def typed_stack(v):
    """The visible frames' methods and types, to the depth both files are printed at."""
    return [(method_name(f), f.get("type")) for f in visible_frames(v)][:STACK_DEPTH]


def all_frames(v):
    """The sample's Java frames, hidden ones included."""
    return (v.get("stackTrace") or {}).get("frames") or []


def pairs(ours_events, jdk_events, max_gap_ns=PAIR_GAP_NS):
    """Each JDK sample with the agent's sample of the same timer tick: both timers count the
    thread's CPU time, so the kernel delivers both signals on one tick, the JDK's first and the
    agent's a few microseconds later, before the thread runs on. Returns (jdk, ours) values."""
    times = [t for t, _ in ours_events]
    out = []
    for t, v in jdk_events:
        i = bisect.bisect_left(times, t)
        if i < len(times) and times[i] - t <= max_gap_ns:
            out.append((v, ours_events[i][1]))
    return out


def profile(events, window, unbiased_only=False):
    shares = defaultdict(int)
    total = with_stack = samples = without = 0
    for start_ns, v in events:
        if not window[0] <= start_ns <= window[1]:
            continue
        if unbiased_only and v.get("biased"):
            continue
        weight = duration_ns(v["samplingPeriod"])
        samples += 1
        total += weight
        top = top_method(v)
        if top is None:
            without += 1
            continue
        shares[top] += weight
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
    ours_events = samples_of(a.jfr, a.ours, a.thread)
    jdk_events = samples_of(a.jfr, a.jdk, a.thread)
    if not ours_events or not jdk_events:
        print(f"SAMPLES_OURS {len(ours_events)} WITHOUT_JAVA_STACK 0")
        print(f"SAMPLES_JDK {len(jdk_events)} WITHOUT_JAVA_STACK 0")
        print("no samples to compare", file=sys.stderr)
        return 1
    window = (max(min(t for t, _ in ours_events), min(t for t, _ in jdk_events)),
              min(max(t for t, _ in ours_events), max(t for t, _ in jdk_events)))
    ours, n_ours, failed_ours = profile(ours_events, window)
    jdk, n_jdk, failed_jdk = profile(jdk_events, window, a.unbiased)
    top = sorted(jdk, key=jdk.get, reverse=True)[: a.top]
    print(f"{'method':<70} {'jdk %':>7} {'ours %':>7} {'diff pp':>8}")
    worst = 0.0
    for m in top:
        d = ours.get(m, 0.0) - jdk[m]
        worst = max(worst, abs(d))
        print(f"{m[-70:]:<70} {jdk[m]:7.2f} {ours.get(m, 0.0):7.2f} {d:+8.2f}")
    print(f"WINDOW_MS {(window[1] - window[0]) / 1e6:.0f} "
          f"(of {len(ours_events)} agent samples, {n_ours} inside)")
    print(f"SAMPLES_OURS {n_ours} WITHOUT_JAVA_STACK {failed_ours}")
    print(f"SAMPLES_JDK {n_jdk} WITHOUT_JAVA_STACK {failed_jdk}")
    print(f"MAX_DIFF_PP {worst:.2f}")
    # Sample by sample: the JDK's samples taken where the thread was (not `biased`), beside the
    # agent's sample of the same tick.
    same_tick = [(j, o) for j, o in pairs(ours_events, jdk_events) if not j.get("biased")]
    agree = sum(1 for j, o in same_tick if top_method(j) == top_method(o))
    stacks_agree = sum(1 for j, o in same_tick if typed_stack(j) == typed_stack(o))
    counts_jdk, counts_ours = defaultdict(int), defaultdict(int)
    for j, o in same_tick:
        counts_jdk[top_method(j)] += 1
        counts_ours[top_method(o)] += 1
    paired_worst = 0.0
    n = max(len(same_tick), 1)
    for m in sorted(counts_jdk, key=counts_jdk.get, reverse=True)[: a.top]:
        paired_worst = max(paired_worst, 100.0 * abs(counts_jdk[m] - counts_ours[m]) / n)
    print(f"SAME_TICK {len(same_tick)} of {n_jdk} JDK samples (not biased, with the agent's "
          f"sample of the same tick)")
    print(f"SAME_TICK_TOP_AGREE_PCT {100.0 * agree / n:.1f}")
    print(f"SAME_TICK_STACK_AGREE_PCT {100.0 * stacks_agree / n:.1f}")
    print(f"SAME_TICK_MAX_DIFF_PP {paired_worst:.2f}")


if __name__ == "__main__":
    sys.exit(main())
