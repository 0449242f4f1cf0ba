#!/usr/bin/env python3
"""The reverse of tools/scripts/arm64.sh (`reverse`): one x86_64 recording symbolized by the
host's jfr-symbolize and by the aarch64 one, both as `-f json`. Every stack must carry the same
weight under the same frames (name, kind, library, file, line), except that a frame in the vDSO
counts as `[vdso]` alone: the aarch64 process has no x86_64 vDSO to read and keeps the frame's
offset. Prints the counts; exits 1 on any other difference.

    arm64_reverse_check.py HOST.json AARCH64.json
"""
import json
import sys
from collections import Counter


def stacks(path):
    """Weight (samples, CPU ns) per stack of frame keys; vDSO frames reduced to `[vdso]`."""
    report = json.load(open(path))
    frames = report["frames"]

    def key(i):
        f = frames[i]
        if f.get("library") == "[vdso]":
            return ("[vdso]",)
        return (f["name"], f.get("kind"), f.get("library"), f.get("file"), f.get("line"))

    weights = Counter()
    for s in report["stacks"]:
        k = tuple(key(i) for i in s["frames"])
        weights[(k, "samples")] += s["weight"]["samples"]
        weights[(k, "cpuNanos")] += s["weight"]["cpuNanos"]
    return weights, sum(1 for f in frames if f.get("library") == "[vdso]")


def main():
    host, host_vdso = stacks(sys.argv[1])
    arm, arm_vdso = stacks(sys.argv[2])
    n = sum(1 for k in host if k[1] == "samples")
    differ = sorted({k[0] for k in set(host) | set(arm) if host.get(k) != arm.get(k)})
    print(f"  x86_64 recording symbolized on aarch64: {n} stacks, {len(differ)} differ; "
          f"vDSO frames {host_vdso} (host) / {arm_vdso} (aarch64)")
    for k in differ[:10]:
        print(f"    differs: {' > '.join(f[0] for f in k)}")
    if differ or n == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
