#!/usr/bin/env python3
"""The bundled demo recorded on aarch64 (tools/scripts/arm64.sh demo), checked on the host:
per thread, the share of samples whose stack holds the thread's Java loop and, below it, the
native functions it must name: our C's checksum_block (and `mix` in it), zlib's deflate code,
libc's merge sort (qsort) calling the demo's comparator. Exits 1 if a thread has no samples or a share is under its floor.

    arm64_demo_check.py NAME CASE.collapsed CASE.json LIBZ AGENT.err

CASE.collapsed: `jfr-symbolize --threads -f collapsed` (weights: CPU ns); CASE.json: `jfr
print --json` of jdk.CPUTimeSample and jdk.CPUInformation (the architecture and the sample
count, read by the JDK's own parser); LIBZ: the aarch64 libz the demo loaded; AGENT.err: the
JVM's stderr, with the agent's summary (how many Java stacks HotSpot's frame walk gave).
"""
import json
import re
import subprocess
import sys
from collections import defaultdict

from arm64_report import folded, in_order

# A native frame is named from its library's symbols: a function's own name, or the nearest
# exported symbol plus an offset where the library keeps no other (Debian's libz: its static
# deflate functions are named so). `library:` frames are matched by that library's exported
# names, read from the library itself with readelf (an independent reader), on the host.
# thread: (its Java loop, what must be below it, in order: a name, or `library:PATH` for any
# frame named from that library's dynamic symbols)
EXPECT = {
    "c-checksum": ("JfrNativeDemo.checksumLoop", ["Java_JfrNativeDemo_checksum", "checksum_block"]),
    "zlib-compress": ("JfrNativeDemo.compressLoop", ["Java_JfrNativeDemo_compress", "library:libz"]),
    "libc-qsort": ("JfrNativeDemo.sortLoop", ["Java_JfrNativeDemo_sort", "msort_with_tmp"]),
    "java-hashmap": ("JfrNativeDemo.javaLoop", []),
}
# Named in some samples: `mix` (the checksum's inner function, kept out of line) and the
# comparator libc's sort calls back (most of the sort's time is in msort_with_tmp itself).
ALSO_NAMED = {"c-checksum": "mix", "libc-qsort": "compare_keys"}
# Floors under qemu. The Java frames come from HotSpot's frame walk (the VM walk, aarch64 since
# issue 42's second part): measured 99.0-100 % of each thread's samples with its Java loop, and
# 890-898 of ~900 samples' Java stacks from the VM walk. Before it, from AsyncGetCallTrace alone,
# the Java thread had 81-93 % (it fails with -5 "unknown Java" in prologues, stubs, GC).
JAVA_FLOOR = 0.95
# The least share of all samples whose Java stack the VM walk gave (the agent's summary).
VM_WALK_FLOOR = 0.90
NATIVE_FLOOR = 0.90


def dynamic_names(library):
    """The names in `library`'s dynamic symbol table, by readelf."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", library], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[0].endswith(":") and parts[6] != "UND":
            names.add(parts[7].split("@")[0])
    return names


def matches(frame, want, libraries):
    if want.startswith("library:"):
        return frame.split("+0x")[0] in libraries[want]
    return frame == want


def main():
    name, collapsed, json_path, libz, err_path = sys.argv[1:6]
    libraries = {"library:libz": dynamic_names(libz)}
    total = defaultdict(int)
    java = defaultdict(int)
    both = defaultdict(int)
    named = defaultdict(int)
    for thread, frames, n in folded(collapsed):
        if thread not in EXPECT:
            continue
        total[thread] += n
        if ALSO_NAMED.get(thread) in frames:
            named[thread] += n
        loop, native = EXPECT[thread]
        if loop in frames:
            java[thread] += n
            if in_order(frames[frames.index(loop):], native,
                        lambda f, w: matches(f, w, libraries)):
                both[thread] += n
    events = json.load(open(json_path))["recording"]["events"]
    arch = next((e["values"].get("cpu", "?") for e in events
                 if e["type"] == "jdk.CPUInformation"), "?")
    samples = sum(1 for e in events if e["type"] == "jdk.CPUTimeSample")
    print(f"\n{name}: recorded on {arch.splitlines()[0][:60]}, {samples} samples (jfr print)")
    print(f"  {'thread':14} {'CPU s':>6} {'Java loop':>9} {'+ native':>8}  below the loop, in order")
    failed = []
    for thread, (loop, native) in EXPECT.items():
        n = total.get(thread, 0)
        j = java[thread] / n if n else 0.0
        b = both[thread] / n if n else 0.0
        also = ALSO_NAMED.get(thread)
        extra = f" ({also}: {100 * named[thread] / n:.1f}%)" if also and n else ""
        print(f"  {thread:14} {n / 1e9:6.2f} {100 * j:8.1f}% {100 * b:7.1f}%  "
              f"{' > '.join(native) or '-'}{extra}")
        short = j < JAVA_FLOOR or (native and b < NATIVE_FLOOR)
        if n == 0 or short or (also and named[thread] == 0):
            failed.append(thread)
    if "aarch64" not in arch.lower():
        failed.append(f"architecture {arch}")
    err = open(err_path, errors="replace").read()
    written = re.search(r"wrote \S+: (\d+) samples", err)
    vm = re.search(r"Java stacks from HotSpot's frame descriptions: (\d+)", err)
    vm_share = int(vm.group(1)) / int(written.group(1)) if vm and written else 0.0
    print(f"  Java stacks from HotSpot's frame walk: {100 * vm_share:.1f}% of the agent's samples")
    if vm_share < VM_WALK_FLOOR:
        failed.append(f"VM walk {100 * vm_share:.1f}%")
    if failed:
        print(f"  FAILED: {', '.join(failed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
