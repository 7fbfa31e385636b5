#!/usr/bin/python3
"""Collects a `make bench` run: parses reports/bench/latest.txt, writes latest.json and prints the
targets table (bench/README.md).

Usage: collect.py LATEST_TXT TARGETS_TXT LATEST_JSON [BUILD_DIR]

A MISS is printed, never an error: benchmarks are not tests. Exit status 2 only when an input
cannot be read or a targets line is malformed.
"""

import fnmatch
import json
import os
import platform
import re
import subprocess
import sys
import time

TIMES = ("median_ms", "min_ms", "max_ms")
CMPS = {
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
}


def number(text):
    try:
        return float(text)
    except ValueError:
        return text


def parse_bench_line(line, program):
    """`bench: <name> key=value ...` -> dict, or None when the line is not one."""
    parts = line.split()
    if len(parts) < 2 or parts[0] != "bench:":
        return None
    entry = {"program": program, "name": parts[1]}
    fields = {}
    for p in parts[2:]:
        key, eq, value = p.partition("=")
        if not eq:
            continue
        if key in TIMES or key == "ratio":
            entry[key] = number(value)
        elif key == "vs":
            entry[key] = value
        else:
            fields[key] = number(value)
    entry["fields"] = fields
    return entry


def parse_latest(path):
    programs, lines, header = [], [], {}
    program = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("== "):
                program = {"name": line[3:].strip(), "exit": None, "seconds": None, "notes": []}
                programs.append(program)
            elif line.startswith("# program "):
                m = re.match(r"# program (\S+) exit=(-?\d+) seconds=([\d.]+)", line)
                if m and program and program["name"] == m.group(1):
                    program["exit"] = int(m.group(2))
                    program["seconds"] = float(m.group(3))
            elif line.startswith("# loadavg "):
                what, _, rest = line[len("# loadavg "):].partition(" ")
                header["loadavg_" + what] = rest.strip()
            elif line.startswith("bench:"):
                entry = parse_bench_line(line, program["name"] if program else None)
                if entry:
                    lines.append(entry)
            elif line.startswith("#") and program:
                program["notes"].append(line[1:].strip())
            elif line.startswith("# "):
                header.setdefault("header", []).append(line[2:])
    return programs, lines, header


def parse_targets(path):
    targets = []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 5)
            if len(parts) < 5 or parts[2] not in CMPS:
                sys.stderr.write("%s:%d: malformed target line\n" % (path, n))
                sys.exit(2)
            try:
                threshold = float(parts[3])
            except ValueError:
                sys.stderr.write("%s:%d: threshold %r is not a number\n" % (path, n, parts[3]))
                sys.exit(2)
            issue = parts[4]
            targets.append({
                "pattern": parts[0], "field": parts[1], "cmp": parts[2], "threshold": threshold,
                "issue": issue.rstrip("*"), "stretch": issue.endswith("*"),
                "what": parts[5] if len(parts) > 5 else "",
            })
    return targets


def value_of(entry, field):
    if field in entry and isinstance(entry[field], float):
        return entry[field]
    v = entry["fields"].get(field)
    return v if isinstance(v, float) else None


def judge(targets, lines):
    for t in targets:
        t["results"] = []
        for e in lines:
            if not fnmatch.fnmatchcase(e["name"], t["pattern"]):
                continue
            v = value_of(e, t["field"])
            if v is None:
                verdict = "NO DATA"
            elif CMPS[t["cmp"]](v, t["threshold"]):
                verdict = "PASS"
            else:
                verdict = "MISS (stretch)" if t["stretch"] else "MISS"
            t["results"].append({"name": e["name"], "value": v, "verdict": verdict})
        if not t["results"]:
            t["results"].append({"name": t["pattern"], "value": None, "verdict": "NO DATA"})


def run_text(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def machine(header, build_dir):
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l for l in f if l.startswith("flags")), "")
    except OSError:
        pass
    build_type = None
    if build_dir:
        try:
            with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
                for line in f:
                    if line.startswith("CMAKE_BUILD_TYPE:"):
                        build_type = line.split("=", 1)[1].strip()
        except OSError:
            pass
    with open("/proc/loadavg") as f:
        load_end = f.read().strip()
    return {
        "hostname": platform.node(),
        "kernel": "%s %s" % (platform.system(), platform.release()),
        "arch": platform.machine(),
        "cpu": cpu,
        "cpus_online": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "avx2": " avx2" in flags,
        "avx512f": " avx512f" in flags,
        "mem_bytes": mem,
        "gcc": run_text(["gcc", "-dumpfullversion"]),
        "build_type": build_type,
        "git_rev": run_text(["git", "rev-parse", "HEAD"]),
        "loadavg_start": header.get("loadavg_start"),
        "loadavg_end": load_end,
    }


def fmt(v):
    if v is None:
        return "-"
    a = abs(v)
    return "%.0f" % v if a >= 1000 else "%.2f" % v if a >= 10 else "%.3f" % v


def print_table(targets, m, programs):
    print()
    print("targets (bench/targets.txt) on %s, %s CPUs, load %s -> %s" % (
        m["cpu"], m["cpus_usable"], (m["loadavg_start"] or "?").split(" ")[0],
        m["loadavg_end"].split(" ")[0]))
    rows = [("line", "field", "issue", "target", "measured", "verdict")]
    for t in targets:
        for r in t["results"]:
            rows.append((r["name"], t["field"], t["issue"] + ("*" if t["stretch"] else ""),
                         "%s %s" % (t["cmp"], fmt(t["threshold"])), fmt(r["value"]),
                         r["verdict"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, r in enumerate(rows):
        print("  ".join(c.ljust(widths[k]) if k < 3 else c.rjust(widths[k]) if k < 5 else c
                        for k, c in enumerate(r)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    count = {}
    for t in targets:
        for r in t["results"]:
            key = r["verdict"].split(" ")[0] if r["verdict"] != "NO DATA" else "NO DATA"
            count[key] = count.get(key, 0) + 1
    print("%d PASS, %d MISS, %d NO DATA (a MISS does not fail make bench)" % (
        count.get("PASS", 0), count.get("MISS", 0), count.get("NO DATA", 0)))
    failed = [p["name"] for p in programs if p["exit"] not in (0, None)]
    if failed:
        print("bench programs that failed: %s" % ", ".join(failed))


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: collect.py LATEST_TXT TARGETS_TXT LATEST_JSON [BUILD_DIR]")
    try:
        programs, lines, header = parse_latest(sys.argv[1])
        targets = parse_targets(sys.argv[2])
    except OSError as e:
        sys.stderr.write("collect.py: %s\n" % e)
        sys.exit(2)
    judge(targets, lines)
    m = machine(header, sys.argv[4] if len(sys.argv) > 4 else None)
    doc = {
        "schema": 1,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "make bench",
        "machine": m,
        "header": header.get("header", []),
        "programs": programs,
        "lines": lines,
        "targets": targets,
    }
    tmp = sys.argv[3] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, sys.argv[3])
    print_table(targets, m, programs)
    print("wrote %s" % sys.argv[3])


if __name__ == "__main__":
    main()
