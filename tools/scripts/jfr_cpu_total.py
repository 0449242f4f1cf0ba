#!/usr/bin/env python3
"""Σ samplingPeriod of the jdk.CPUTimeSample events and Σ lostCpuTime of the
jdk.CPUTimeSamplesLost events of JFR files, in ns, as the JDK's own reader (`jfr print --json`)
reads them: the total an OTLP export of those files must carry, taken without our own reader.

usage: jfr_cpu_total.py JFR_TOOL FILE_OR_DIR...   (a directory: its *.jfr chunk files)
Prints one line: TOTAL_NS SAMPLING_NS LOST_NS EVENTS.
"""
import json
import os
import re
import subprocess
import sys

DURATION = re.compile(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?$")


def nanos(text):
    """An ISO-8601 duration as jfr print --json writes it (PT0.010000001S, PT1M2S) in ns."""
    m = DURATION.match(text)
    if not m or text == "PT":
        raise ValueError("not a duration: %r" % text)
    h, mi, s, frac = m.groups()
    total = (int(h or 0) * 3600 + int(mi or 0) * 60 + int(s or 0)) * 10**9
    return total + int((frac or "").ljust(9, "0") or 0)


def files(args):
    for a in args:
        if os.path.isdir(a):
            yield from sorted(os.path.join(a, f) for f in os.listdir(a) if f.endswith(".jfr"))
        else:
            yield a


def main():
    jfr, paths = sys.argv[1], list(files(sys.argv[2:]))
    if not paths:
        sys.exit("jfr_cpu_total.py: no JFR file in %s" % sys.argv[2:])
    sampling = lost = events = 0
    for path in paths:
        out = subprocess.run([jfr, "print", "--json", "--events",
                              "jdk.CPUTimeSample,jdk.CPUTimeSamplesLost", path],
                             check=True, capture_output=True, text=True).stdout
        for e in json.loads(out)["recording"]["events"]:
            v = e["values"]
            if e["type"] == "jdk.CPUTimeSample":
                sampling += nanos(v["samplingPeriod"])
            else:
                lost += nanos(v["lostCpuTime"])
            events += 1
    print(sampling + lost, sampling, lost, events)


if __name__ == "__main__":
    main()
