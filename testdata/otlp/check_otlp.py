#!/usr/bin/env python3
"""Reads OTLP profiles files (ExportProfilesServiceRequest, gzip-compressed or not) with the
official generated code (PyPI opentelemetry-proto 1.45.x: profiles_service_pb2, profiles_pb2)
and prints, for each file, a JSON summary the Rust tests compare with independent readers:
totals, per-thread totals and attributes, flat and cumulative values per function, locations
with their lines, mappings with their attributes. `errors` lists every rule of the format the
file breaks (dictionary zero values, indexes in range, values and timestamps that agree).

usage: check_otlp.py [--locations] FILE...
"""

import gzip
import json
import sys

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2
from opentelemetry.proto.profiles.v1development import profiles_pb2


def any_value(v, strings=()):
    """An AnyValue's value; a string given as a string-table reference (string_value_strindex,
    as an OpenTelemetry Collector forwards resource attributes) is resolved in `strings`."""
    kind = v.WhichOneof("value")
    if kind == "string_value_strindex":
        i = v.string_value_strindex
        return strings[i] if 0 <= i < len(strings) else None
    return None if kind is None else getattr(v, kind)


def key_of(kv, strings):
    """A KeyValue's key, inline or as a string-table reference (key_strindex)."""
    if kv.key:
        return kv.key
    i = kv.key_strindex
    return strings[i] if 0 < i < len(strings) else ""


def summarize(path, with_locations):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    request = profiles_service_pb2.ExportProfilesServiceRequest()
    request.ParseFromString(data)
    # The same bytes read as ProfilesData: the two messages share their field numbers.
    as_data = profiles_pb2.ProfilesData()
    as_data.ParseFromString(data)
    errors = []
    if len(as_data.resource_profiles) != len(request.resource_profiles):
        errors.append("ProfilesData reads another number of resource profiles")
    d = request.dictionary
    strings = d.string_table

    def check(cond, what):
        if not cond:
            errors.append(what)

    def s(i):
        check(0 <= i < len(strings), f"string index {i} out of range")
        return strings[i] if 0 <= i < len(strings) else None

    check(len(strings) > 0 and strings[0] == "", "string_table[0] is not ''")
    for name in ("mapping_table", "location_table", "function_table", "link_table",
                 "attribute_table", "stack_table"):
        table = getattr(d, name)
        check(len(table) > 0, f"{name} is empty")
        if len(table) > 0:
            check(table[0].ByteSize() == 0, f"{name}[0] is not the zero value")

    def attrs(indices):
        out = {}
        for i in indices:
            check(0 < i < len(d.attribute_table), f"attribute index {i} out of range")
            if 0 < i < len(d.attribute_table):
                a = d.attribute_table[i]
                key = s(a.key_strindex)
                check(key not in out, f"attribute {key} twice in one message")
                out[key] = any_value(a.value, strings)
        return out

    mappings = []
    for m in d.mapping_table[1:]:
        mappings.append({
            "filename": s(m.filename_strindex),
            "start": m.memory_start,
            "limit": m.memory_limit,
            "offset": m.file_offset,
            "attributes": attrs(m.attribute_indices),
        })

    functions = []
    for f in d.function_table:
        functions.append((s(f.name_strindex), s(f.system_name_strindex), s(f.filename_strindex)))

    locations = []
    for i, loc in enumerate(d.location_table):
        check(0 <= loc.mapping_index < len(d.mapping_table), f"location {i}: mapping out of range")
        lines = []
        for line in loc.lines:
            check(0 < line.function_index < len(functions), f"location {i}: function out of range")
            name, system, file = functions[line.function_index] if 0 < line.function_index < len(functions) else (None, None, None)
            lines.append({"function": name, "system": system, "file": file, "line": line.line})
        if loc.mapping_index > 0 and loc.mapping_index < len(d.mapping_table):
            m = d.mapping_table[loc.mapping_index]
            check(m.memory_start <= loc.address < m.memory_limit,
                  f"location {i}: address {loc.address:#x} outside its mapping")
        locations.append({
            "mapping": loc.mapping_index,
            "address": loc.address,
            "lines": lines,
            "attributes": attrs(loc.attribute_indices),
        })

    profiles = []
    for rp in request.resource_profiles:
        resource = {key_of(kv, strings): any_value(kv.value, strings)
                    for kv in rp.resource.attributes}
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                start, end = p.time_unix_nano, p.time_unix_nano + p.duration_nano
                total = 0
                values = 0
                timestamps = 0
                threads = {}
                thread_attributes = set()
                flat = {}
                cum = {}
                stacks = []
                for k, sample in enumerate(p.samples):
                    check(0 < sample.stack_index < len(d.stack_table) or len(d.stack_table[0].location_indices) == 0,
                          f"sample {k}: stack out of range")
                    n_ts = len(sample.timestamps_unix_nano)
                    check(len(sample.values) > 0 or n_ts > 0, f"sample {k}: no value and no timestamp")
                    check(n_ts == 0 or len(sample.values) == 0 or n_ts == len(sample.values),
                          f"sample {k}: {len(sample.values)} values but {n_ts} timestamps")
                    for t in sample.timestamps_unix_nano:
                        check(start <= t <= end, f"sample {k}: timestamp {t} outside the profile")
                    weight = sum(sample.values) if len(sample.values) else n_ts
                    total += weight
                    values += max(len(sample.values), n_ts)
                    timestamps += n_ts
                    a = attrs(sample.attribute_indices)
                    name = a.get("thread.name")
                    threads[name or ""] = threads.get(name or "", 0) + weight
                    thread_attributes.add(json.dumps(a, sort_keys=True))
                    stack = d.stack_table[sample.stack_index].location_indices if sample.stack_index < len(d.stack_table) else []
                    seen = set()
                    frames = []
                    for depth, li in enumerate(stack):
                        check(0 < li < len(locations), f"sample {k}: location {li} out of range")
                        if not 0 < li < len(locations):
                            continue
                        loc = locations[li]
                        names = [l["function"] for l in loc["lines"]] or [f"{loc['address']:#x}"]
                        if depth == 0:
                            flat[names[0]] = flat.get(names[0], 0) + weight
                        for fn in names:
                            if fn not in seen:
                                seen.add(fn)
                                cum[fn] = cum.get(fn, 0) + weight
                        frames.append(li)
                    if with_locations:
                        stacks.append({"locations": frames, "weight": weight, "attributes": a})
                st = p.sample_type
                pt = p.period_type
                profiles.append({
                    "resource": resource,
                    "scope": {"name": sp.scope.name, "version": sp.scope.version},
                    "sample_type": [s(st.type_strindex), s(st.unit_strindex)],
                    "period_type": [s(pt.type_strindex), s(pt.unit_strindex)],
                    "period": p.period,
                    "time_unix_nano": p.time_unix_nano,
                    "duration_nano": p.duration_nano,
                    "total": total,
                    "values": values,
                    "timestamps": timestamps,
                    "samples": len(p.samples),
                    "threads": threads,
                    "thread_attributes": [json.loads(t) for t in sorted(thread_attributes)],
                    "flat": flat,
                    "cum": cum,
                    "stacks": stacks,
                })
    native = [l for l in locations[1:] if l["mapping"] > 0]
    out = {
        "file": path,
        "profiles": profiles,
        "mappings": mappings,
        "native_locations": len(native),
        "native_locations_with_build_id": sum(
            1 for l in native
            if "process.executable.build_id.gnu" in mappings[l["mapping"] - 1]["attributes"]),
        "errors": errors,
    }
    if with_locations:
        out["locations"] = locations
    return out


def main():
    args = sys.argv[1:]
    with_locations = "--locations" in args
    files = [a for a in args if a != "--locations"]
    json.dump([summarize(f, with_locations) for f in files], sys.stdout)


if __name__ == "__main__":
    main()
