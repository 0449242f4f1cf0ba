#!/usr/bin/env python3
"""Reads back from a running Grafana Pyroscope, through its own query API, the merged flame graph
of one service over a time range, and prints it as JSON: the profile types Pyroscope made of what
it received, the flame graph's total, and per function its flat (self) and cumulative value and
its callers, and every stack (root first) with its value.

usage: pyroscope_query.py URL SERVICE START_MS END_MS [PROFILE_TYPE_ID]

URL is Pyroscope's HTTP address (http://127.0.0.1:4040). PROFILE_TYPE_ID defaults to the type
Pyroscope makes of jfr-native's export (sample type cpu/nanoseconds, period type cpu/nanoseconds:
the profile is named "cpu"); an error if Pyroscope does not list it.

Pyroscope answers SelectMergeStacktraces with a flame graph: `names`, and `levels`, one per depth,
each a flat list of nodes of four numbers (x offset from the end of the level's previous node,
total, self, index into names). A node's parent is the node of the level above whose span
[x, x + total) holds the node's x.
"""

import json
import sys
import urllib.request

DEFAULT_TYPE = "cpu:cpu:nanoseconds:cpu:nanoseconds"


def call(url, method, body):
    request = urllib.request.Request(
        f"{url}/querier.v1.QuerierService/{method}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def tree(flamegraph):
    """The flame graph's nodes as (depth, x, total, self, name, parent index) in level order."""
    names = flamegraph["names"]
    nodes = []
    previous_level = []  # (x, total, node index) of the level above
    for depth, level in enumerate(flamegraph.get("levels", [])):
        values = [int(v) for v in level.get("values", [])]
        this_level = []
        x = 0
        for i in range(0, len(values), 4):
            delta, total, self_value, name = values[i:i + 4]
            x += delta
            parent = next((n for (px, pt, n) in previous_level if px <= x < px + pt), None)
            if depth > 0 and parent is None:
                raise ValueError(f"node at depth {depth}, x {x} has no parent")
            nodes.append((depth, x, total, self_value, names[name], parent))
            this_level.append((x, total, len(nodes) - 1))
            x += total
        previous_level = this_level
    return nodes


def summarize(flamegraph):
    nodes = tree(flamegraph)
    functions = {}
    stacks = []
    for i, (depth, _x, total, self_value, name, parent) in enumerate(nodes):
        if depth == 0:
            continue  # the root, "total"
        path = []
        p = i
        while p is not None and nodes[p][0] > 0:
            path.append(nodes[p][4])
            p = nodes[p][5]
        path.reverse()
        f = functions.setdefault(name, {"flat": 0, "cum": 0, "callers": {}})
        f["flat"] += self_value
        # A function on the stack twice (recursion) counts once in cum: only where it is
        # outermost.
        if name not in path[:-1]:
            f["cum"] += total
        caller = nodes[parent][4] if nodes[parent][0] > 0 else None
        if caller is not None:
            f["callers"][caller] = f["callers"].get(caller, 0) + total
        if self_value > 0:
            stacks.append({"frames": path, "value": self_value})
    return functions, stacks


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    url, service, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    types = call(url, "ProfileTypes", {"start": start, "end": end}).get("profileTypes", [])
    selector = '{service_name="%s"}' % service
    type_id = sys.argv[5] if len(sys.argv) == 6 else DEFAULT_TYPE
    if type_id not in [t["ID"] for t in types]:
        sys.exit(f"pyroscope_query: Pyroscope lists no {type_id}: {[t['ID'] for t in types]}")
    answer = call(url, "SelectMergeStacktraces", {
        "profileTypeID": type_id, "labelSelector": selector, "start": start, "end": end,
    })
    flamegraph = answer.get("flamegraph", {"names": [], "levels": []})
    functions, stacks = summarize(flamegraph)
    json.dump({
        "profile_types": [t["ID"] for t in types],
        "profile_type": type_id,
        "total": int(flamegraph.get("total", 0)),
        "functions": functions,
        "stacks": stacks,
    }, sys.stdout)


if __name__ == "__main__":
    main()
