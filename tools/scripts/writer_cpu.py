#!/usr/bin/env python3
"""The agent's writer thread's CPU time against the process's, measured from outside (the same
way for any build of the agent): runs COMMAND, finds the thread named "jfr-native writ" and
polls /proc every 100 ms for its and the process's CPU time until the process exits; prints
the last reading (up to 100 ms of either may be missing at the end).

usage: writer_cpu.py COMMAND...
"""

import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(stat_path):
    with open(stat_path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    writer, process = 0.0, 0.0
    while proc.poll() is None:
        try:
            process = cpu_s(f"/proc/{proc.pid}/stat")
            for tid in os.listdir(f"/proc/{proc.pid}/task"):
                with open(f"/proc/{proc.pid}/task/{tid}/comm") as f:
                    if f.read().strip() == "jfr-native writ":
                        writer = cpu_s(f"/proc/{proc.pid}/task/{tid}/stat")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
        time.sleep(0.1)
    share = 100.0 * writer / process if process else 0.0
    print(f"writer {writer:.2f} CPU-s of the process's {process:.2f} CPU-s: {share:.1f} %")


if __name__ == "__main__":
    main()
