#!/usr/bin/env python3
"""One case of tools/scripts/arm64.sh, read on the host: per thread of the cstack workload,
samples, the share whose native frames are the exact chain, the share whose Java stack reaches
Thread.run, and the sum of samplingPeriod against the thread's CPU time.

    arm64_report.py NAME CASE.collapsed CASE.json CASE.out [MIN_EXACT]

CASE.collapsed: `jfr-symbolize --threads --samples -f collapsed` (one sample per unit of
weight); CASE.json: `jfr print --json` of jdk.CPUTimeSample, jdk.CPUInformation and
jdk.OSInformation; CASE.out: the workload's `CPU <thread> <ns>` lines. With MIN_EXACT (a share),
exits 1 if a chain thread has no chain samples or an exact share under it, or if the JNI
upcall thread has no sample in its Java callee or under MIN_EXACT of those with the native
frames between in place (the native method, JNI's call and the VM's call helper between the
Java caller and the Java callee, down to Thread.run).
"""
import json
import re
import sys
from collections import defaultdict

CHAINS = {"chain-plain": "ChainPlain", "chain-fp": "ChainFp", "chain-nofp": "ChainNofp"}
CHAIN = ["chain_outer", "chain_middle", "chain_leaf"]
# The JNI upcall mode: from Thread.run, in this order (other frames may lie between).
UPCALL = ["Cstack.upcall", "Java_Cstack_upcall", "JavaCalls::call_helper", "Cstack.upcallWork"]


def iso_seconds(text):
    m = re.fullmatch(r"PT(?:([\d.]+)H)?(?:([\d.]+)M)?(?:([\d.]+)S)?", text)
    if not m:
        return 0.0
    h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    return h * 3600 + mi * 60 + s


def exact_chain(frames, cls):
    """The native frames below `<cls>.burn` are Java_<cls>_burn, chain_outer, chain_middle
    and, if the sample is in the leaf, chain_leaf last; other callees of chain_middle (the
    clock) may follow it."""
    jni = f"Java_{cls}_burn"
    if jni not in frames:
        return False
    below = frames[frames.index(jni) + 1:]
    if below[:2] != CHAIN[:2]:
        return False
    return "chain_leaf" not in below or below[2:] == ["chain_leaf"]


def in_order(frames, wants, same):
    """Whether `wants` match frames of `frames` in this order (not necessarily adjacent), a
    frame matching a want where `same(frame, want)`."""
    i = 0
    for want in wants:
        while i < len(frames) and not same(frames[i], want):
            i += 1
        if i == len(frames):
            return False
        i += 1
    return True


def named(frame, name):
    """Whether `frame` is `name`, before any argument list (`JavaCalls::call_helper(...)`)."""
    return frame.split("(")[0] == name


def folded(path):
    """(thread, frames, weight) per line of `jfr-symbolize --threads -f collapsed`; frames[0]
    is the thread's root frame, `[name]`."""
    for line in open(path):
        stack, _, weight = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        yield frames[0].strip("[]"), frames, int(weight)


def main():
    name, collapsed, json_path, out_path = sys.argv[1:5]
    min_exact = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    samples = defaultdict(int)
    in_chain = defaultdict(int)
    exact = defaultdict(int)
    java = defaultdict(int)
    callee = crossed = 0
    for thread, frames, n in folded(collapsed):
        if len(frames) > 1 and frames[1].startswith("[lost samples"):
            continue
        samples[thread] += n
        if "java.lang.Thread.run" in frames:
            java[thread] += n
        if thread == "upcall" and UPCALL[-1] in frames:
            callee += n
            if frames[1:2] == ["java.lang.Thread.run"] and in_order(frames, UPCALL, named):
                crossed += n
        cls = CHAINS.get(thread)
        if cls and f"{cls}.burn" in frames:
            in_chain[thread] += n
            if exact_chain(frames, cls):
                exact[thread] += n
    events = json.load(open(json_path))["recording"]["events"]
    period = defaultdict(float)
    arch = os_version = "?"
    for e in events:
        v = e["values"]
        if e["type"] == "jdk.CPUTimeSample":
            t = (v.get("eventThread") or {}).get("javaName") or "?"
            period[t] += iso_seconds(v.get("samplingPeriod") or "")
        elif e["type"] == "jdk.CPUInformation":
            arch = v.get("cpu", "?")
        elif e["type"] == "jdk.OSInformation":
            os_version = v.get("osVersion", "?")[:40]
    cpu = {}
    for line in open(out_path):
        parts = line.split()
        if len(parts) == 3 and parts[0] == "CPU":
            cpu[parts[1]] = int(parts[2]) / 1e9
    print(f"\n{name}: recorded on {arch} ({os_version})")
    print(f"  {'thread':12} {'samples':>7} {'in chain':>8} {'exact':>7} {'Java to run()':>13} "
          f"{'Σ period s':>10} {'CPU s':>6} {'ratio':>6}")
    for thread in sorted(cpu, key=lambda t: (t not in CHAINS, t)):
        n = samples.get(thread, 0)
        chain = in_chain.get(thread, 0)
        share = f"{100 * exact[thread] / chain:.1f}%" if chain else "-"
        jshare = f"{100 * java[thread] / n:.1f}%" if n else "-"
        ratio = f"{period[thread] / cpu[thread]:.2f}" if cpu[thread] else "-"
        chain_text = str(chain) if thread in CHAINS else ""
        print(f"  {thread:12} {n:7} {chain_text:>8} {share if thread in CHAINS else '':>7} "
              f"{jshare:>13} {period[thread]:10.2f} {cpu[thread]:6.2f} {ratio:>6}")
    if "upcall" in cpu:
        share = f"{100 * crossed / callee:.1f}%" if callee else "-"
        print(f"  upcall: {callee} samples in {UPCALL[-1]}, {crossed} ({share}) with "
              f"{' > '.join(UPCALL[:-1])} above it, from Thread.run")
    if min_exact > 0:
        low = [t for t in CHAINS
               if not in_chain.get(t) or exact[t] / in_chain[t] < min_exact]
        if low:
            print(f"  FAILED: exact chain under {100 * min_exact:.0f}% in {', '.join(low)}")
        upcall_low = "upcall" in cpu and (not callee or crossed / callee < min_exact)
        if upcall_low:
            print(f"  FAILED: the upcall's native frames in place under {100 * min_exact:.0f}%")
        if low or upcall_low:
            sys.exit(1)


if __name__ == "__main__":
    main()
