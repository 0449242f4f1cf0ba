#!/usr/bin/env python3
"""Puts what Grafana Pyroscope shows of a recording beside jfr-symbolize's report of it: the top
native functions by self CPU time and the top Java methods by total CPU time, as the report
orders them, with Pyroscope's flat and cumulative time for the same names, and both totals.

usage: pyroscope_vs_report.py REPORT.json PYROSCOPE.json [TOP]

REPORT.json is `jfr-symbolize REC --format json`; PYROSCOPE.json is pyroscope_query.py's output.
Native frames the report names by their nearest symbol (`crc32_combine_op+0x40`: no symbol of
their own) or by library and address are exported under that same name (before 2026-11-29 they
were address-only, which a Pyroscope without a symbolizer left out of its flame graph).
"""

import json
import sys


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    report = json.load(open(sys.argv[1]))
    pyro = json.load(open(sys.argv[2]))
    top = int(sys.argv[3]) if len(sys.argv) == 4 else 8
    frames = report["frames"]
    functions = pyro["functions"]
    ours_total = report["total"]["cpuNanos"]
    print("totals: jfr-symbolize %.3f s, Pyroscope %.3f s (%+.2f%%)" % (
        ours_total / 1e9, pyro["total"] / 1e9,
        100.0 * (pyro["total"] - ours_total) / ours_total if ours_total else 0))
    rows = [("native functions, by self time", report["nativeFunctions"], "self", "flat"),
            ("Java methods, by total time", report["javaMethods"], "total", "cum")]
    for title, entries, ours_key, pyro_key in rows:
        ranked = sorted(entries, key=lambda e: -e[ours_key]["cpuNanos"])[:top]
        print(f"\n{title}:")
        print("  %-44s %12s %12s" % ("function", "ours (s)", "Pyroscope (s)"))
        for e in ranked:
            name = frames[e["frame"]]["name"]
            ours = e[ours_key]["cpuNanos"] / 1e9
            theirs = "%.3f" % (functions.get(name, {}).get(pyro_key, 0) / 1e9)
            print("  %-44s %12.3f %12s" % (name[:44], ours, theirs))


if __name__ == "__main__":
    main()
