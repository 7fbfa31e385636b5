#!/usr/bin/env python3
"""The project's own mutation run (`make mutate`, docs/internals/testing.md).

Reads the mutant list tests/mutants/mutants.json (or the lists given with --mutants, run in
turn on the same scratch build; `make mutate` runs it and tests/mutants/blind.json), copies the
source tree once into a scratch
folder (build-mutate/src, git-ignored), configures one build there (build-mutate/build), and for
each mutant: applies it alone (its pattern must match exactly once, else the mutant is STALE),
rebuilds incrementally, runs the ctest entries of its own subset plus the list's cross-cutting
entries one by one with a per-test timeout, records which entries failed, and reverts. A mutant
is killed when at least one entry fails (a timeout counts as a failure); "killed by >= 2" counts
distinct ctest entries. Prints a table, `N killed, N survived, N stale` and the share of core
mutants killed by two or more entries, and a table per module (mutants, killed, survived,
equivalent, other), and writes a JSON result per list (reports/mutate/latest.json for the first,
reports/mutate/<list file name> for each further one).

Exit status: 0 every non-equivalent mutant was killed and none is stale; 1 a mutant survived,
is stale or did not build, or the unmutated tree fails a selected entry; 2 usage error.
"""
import argparse
import concurrent.futures
import datetime
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(ROOT, "tests", "mutants", "mutants.json")
REQUIRED = ("id", "module", "file", "find", "replace", "tests", "why")
# Never copied into the scratch tree: builds, generated reports, git, fuzz corpora.
SKIP_TOP = re.compile(r"^(build.*|reports|\.git|\.notes|fuzz/corpus-.*|fuzz/crash-.*)$")


def die(msg, code=2):
    print("mutate: " + msg, file=sys.stderr)
    sys.exit(code)


def load_list(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        die("%s: %s" % (path, e))
    if not isinstance(doc.get("cross"), str) or not isinstance(doc.get("mutants"), list):
        die("%s: needs a \"cross\" regex and a \"mutants\" list" % path)
    seen = set()
    for i, m in enumerate(doc["mutants"]):
        missing = [k for k in REQUIRED
                   if not isinstance(m.get(k), str) or (not m[k] and k != "replace")]
        if missing:
            die("%s: mutant %d (%s) lacks %s" % (path, i, m.get("id", "?"), ", ".join(missing)))
        if m["id"] in seen:
            die("%s: mutant id %s twice" % (path, m["id"]))
        seen.add(m["id"])
        if m["find"] == m["replace"]:
            die("%s: mutant %s replaces its pattern with itself" % (path, m["id"]))
        for key in ("tests",):
            try:
                re.compile(m[key])
            except re.error as e:
                die("%s: mutant %s: bad %s regex: %s" % (path, m["id"], key, e))
    return doc


def sync_tree(src, dst):
    """Mirrors src into dst, copying only files whose bytes differ, so that the scratch build
    stays incremental from one run to the next. A copied file gets the current time, never the
    source's: a file left mutated by an interrupted run is then older than nothing built from
    it, and the build recompiles it."""
    keep = set()
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        rel = "" if rel == "." else rel
        dirnames[:] = [d for d in dirnames if not SKIP_TOP.match(os.path.join(rel, d))]
        for name in filenames:
            r = os.path.join(rel, name)
            keep.add(r)
            a, b = os.path.join(src, r), os.path.join(dst, r)
            if os.path.islink(a):
                continue
            try:
                same = os.path.getsize(a) == os.path.getsize(b) and open(a, "rb").read() == open(
                    b, "rb").read()
            except OSError:
                same = False
            if not same:
                os.makedirs(os.path.dirname(b), exist_ok=True)
                shutil.copyfile(a, b)
                shutil.copymode(a, b)
    for dirpath, _, filenames in os.walk(dst):
        for name in filenames:
            r = os.path.relpath(os.path.join(dirpath, name), dst)
            if r not in keep:
                os.unlink(os.path.join(dst, r))


def run(cmd, cwd, timeout=None, log=None):
    """Runs cmd in its own process group; on timeout the whole group (ctest, the test, its
    engines) is killed, so nothing of a hung mutant outlives it. Returns (rc, output, seconds),
    rc "timeout" when it was killed."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, errors="replace", start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = "timeout"
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    if log is not None:
        log.write("$ %s\n%s\n" % (" ".join(cmd), out))
    return rc, out, time.monotonic() - t0


class Scratch:
    def __init__(self, base, jobs, log):
        self.base = base
        self.src = os.path.join(base, "src")
        self.build = os.path.join(base, "build")
        self.jobs = jobs
        self.log = log
        self.tests = []  # every ctest entry
        self.applied = os.path.join(base, "applied")  # the file of the mutant in place, if any

    def prepare(self):
        os.makedirs(self.src, exist_ok=True)
        sync_tree(ROOT, self.src)
        # A run killed without unwinding (SIGKILL) left its mutant's file maybe mutated and its
        # objects built from the mutant: the sync restored the bytes, the touch forces the
        # rebuild.
        if os.path.exists(self.applied):
            with open(self.applied, encoding="utf-8") as f:
                left = os.path.join(self.src, f.read().strip())
            if os.path.exists(left):
                os.utime(left)
            os.unlink(self.applied)
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        if not os.path.exists(os.path.join(self.build, "CMakeCache.txt")):
            os.makedirs(self.build, exist_ok=True)
            rc, out, _ = run(["cmake", "-S", self.src, "-B", self.build] + gen +
                             ["-DSYNCROLL_WERROR=ON"], self.src, log=self.log)
            if rc != 0:
                die("configuring the scratch build failed:\n" + out[-3000:], 1)
        rc, out, _ = run(["cmake", "--build", self.build, "-j%d" % self.jobs], self.src,
                         log=self.log)
        if rc != 0:
            die("building the unmutated scratch tree failed:\n" + out[-3000:], 1)
        rc, out, _ = run(["ctest", "-N"], self.build, log=self.log)
        self.tests = re.findall(r"^\s*Test\s+#\d+: (\S+)$", out, re.M)
        if not self.tests:
            die("ctest -N lists no tests in the scratch build", 1)

    def targets(self, tests):
        """Build targets the given entries need: the executable, every helper program of
        tests/CMakeLists.txt (splice_golden, report_fixture, ...) and the Check suites of the
        unit.* entries among them. Benchmarks are never rebuilt."""
        with open(os.path.join(self.src, "tests", "CMakeLists.txt"), encoding="utf-8") as f:
            helpers = re.findall(r"add_executable\((\w+)", f.read())
        t = {"syncroll"} | {h for h in helpers if not h.startswith("${")}
        for name in tests:
            # unit.X is the Check suite tests/test_X.c, unless it is a script entry (unit.npy_numpy)
            # whose programs are among the helpers above.
            if name.startswith("unit.") and os.path.exists(
                    os.path.join(self.src, "tests", "test_" + name[5:] + ".c")):
                t.add("test_" + name[5:])
        return sorted(t)

    def build_targets(self, targets):
        rc, out, secs = run(["cmake", "--build", self.build, "-j%d" % self.jobs, "--target"] +
                            targets, self.src, log=self.log)
        return rc == 0, out, secs

    def run_tests(self, names, timeout):
        """Runs each entry alone (jobs at a time); returns {name: "pass"|"fail"|"timeout"}."""

        def one(name):
            rc, out, secs = run(["ctest", "-R", "^%s$" % re.escape(name), "--output-on-failure",
                                 "--timeout", str(timeout)], self.build, timeout=timeout + 30)
            if rc == "timeout" or "***Timeout" in out:
                return name, "timeout", out, secs
            return name, "pass" if rc == 0 else "fail", out, secs

        res = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs) as pool:
            for name, status, out, secs in pool.map(one, names):
                res[name] = (status, secs)
                if status != "pass" and self.log is not None:
                    self.log.write("---- %s: %s\n%s\n" % (name, status, out[-4000:]))
        return res


def select(all_tests, *patterns):
    rx = [re.compile(p) for p in patterns if p]
    return [t for t in all_tests if any(r.search(t) for r in rx)]


def apply(path, find, replace):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    n = text.count(find)
    if n != 1:
        return None, n
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(find, replace, 1))
    return text, 1


def restore(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def check_patterns(doc, src_root):
    """STALE check only (no build): the match count of each mutant in the given tree."""
    counts = {}
    for m in doc["mutants"]:
        p = os.path.join(src_root, m["file"])
        try:
            with open(p, encoding="utf-8") as f:
                counts[m["id"]] = f.read().count(m["find"])
        except OSError:
            counts[m["id"]] = -1
    return counts


def select_mutants(lists, a):
    """The mutants of each list that --only and --id select, as [(path, doc, mutants)]. A module
    or id must exist in at least one list (else a usage error), so that one --only works across
    lists of which only some hold the module."""
    mods = {m["module"] for _, doc in lists for m in doc["mutants"]}
    ids = {m["id"] for _, doc in lists for m in doc["mutants"]}
    for o in a.only or []:
        if o not in mods:
            die("--only %s: no such module (modules: %s)" % (o, ", ".join(sorted(mods))))
    if a.only:
        ids = {m["id"] for _, doc in lists for m in doc["mutants"] if m["module"] in a.only}
    for i in a.id or []:
        if i not in ids:
            die("--id %s: no such mutant%s" % (i, " in the selected modules" if a.only else ""))
    out = []
    for path, doc in lists:
        muts = [m for m in doc["mutants"] if (not a.only or m["module"] in a.only) and
                (not a.id or m["id"] in a.id)]
        out.append((path, doc, muts))
    return out


def json_paths(a):
    """The first list's result goes to --json; each further list's next to it, named after the
    list (tests/mutants/blind.json -> reports/mutate/blind.json)."""
    paths = [a.json]
    for path in a.mutants[1:]:
        paths.append(os.path.join(os.path.dirname(os.path.abspath(a.json)),
                                  os.path.basename(path)))
    return paths


def recompiled(path, out):
    """Whether the build output shows the mutated file compiled: a source file's own object, or
    for a header (an inline function shared by sources) any object rebuilt after it changed."""
    if path.endswith(".h"):
        return "Building C object" in out
    return os.path.basename(path) + ".o" in out


def run_list(sc, doc, muts, a):
    """Applies each mutant of one list in turn; returns the results."""
    cross = "" if a.no_cross else doc["cross"]
    results = []
    for k, m in enumerate(muts, 1):
        r = {"id": m["id"], "module": m["module"], "file": m["file"],
             "core": bool(m.get("core", True)), "equivalent": m.get("equivalent"),
             "killed_by": [], "timeouts": [], "ran": [], "seconds": 0.0}
        t0 = time.monotonic()
        path = os.path.join(sc.src, m["file"])
        with open(sc.applied, "w", encoding="utf-8") as f:
            f.write(m["file"])
        try:
            orig, n = apply(path, m["find"], m["replace"])
        except OSError:
            orig, n = None, -1
        if orig is None:
            r["status"] = "stale"
            r["matches"] = n
        elif m.get("equivalent"):
            restore(path, orig)
            r["status"] = "equivalent"
        else:
            try:
                tests = select(sc.tests, m["tests"], cross)
                own = select(sc.tests, m["tests"])
                ok, out, bsecs = sc.build_targets(sc.targets(tests))
                r["build_seconds"] = round(bsecs, 1)
                if not ok:
                    r["status"] = "build_error"
                    r["build_output"] = out[-2000:]
                elif not recompiled(m["file"], out):
                    # The build did not recompile the mutated file: its tests would run the
                    # unmutated code and the mutant would survive for nothing.
                    r["status"] = "build_error"
                    r["build_output"] = "the mutated file was not recompiled:\n" + out[-2000:]
                else:
                    res = sc.run_tests(tests, a.timeout)
                    r["ran"] = tests
                    r["killed_by"] = sorted(t for t, (s, _) in res.items() if s != "pass")
                    r["timeouts"] = sorted(t for t, (s, _) in res.items() if s == "timeout")
                    r["own_subset_killed"] = any(t in own for t in r["killed_by"])
                    r["status"] = "killed" if r["killed_by"] else "survived"
            finally:
                restore(path, orig)
        os.unlink(sc.applied)
        r["seconds"] = round(time.monotonic() - t0, 1)
        results.append(r)
        print("[%2d/%d] %-28s %-11s %s" % (k, len(muts), m["id"], r["status"].upper(),
                                          ", ".join(r["killed_by"])), flush=True)
    return results


def main():
    ap = argparse.ArgumentParser(
        description="Mutation run of the test suite: apply each mutant of "
        "tests/mutants/mutants.json alone to a scratch copy, rebuild, run its ctest entries, "
        "record the killers, revert.")
    ap.add_argument("--list", action="store_true", help="list the mutants (with a STALE check)")
    ap.add_argument("--only", metavar="MODULE", action="append",
                    help="run only the mutants of MODULE (repeatable; a list without it runs "
                    "nothing)")
    ap.add_argument("--id", metavar="ID", action="append", help="run only mutant ID (repeatable)")
    ap.add_argument("--timeout", type=int, default=240, metavar="S",
                    help="per ctest entry timeout in seconds (default 240)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="build and test jobs (default 2)")
    ap.add_argument("--mutants", metavar="LIST", action="append",
                    help="a mutant list, repeatable, run in turn on one scratch build (default "
                    "tests/mutants/mutants.json)")
    ap.add_argument("--scratch", default=os.path.join(ROOT, "build-mutate"),
                    help="scratch folder (default build-mutate/)")
    ap.add_argument("--json", default=os.path.join(ROOT, "reports", "mutate", "latest.json"),
                    help="JSON result of the first list (default reports/mutate/latest.json); "
                    "a further list's goes next to it under the list's file name")
    ap.add_argument("--no-cross", action="store_true",
                    help="run only each mutant's own subset, not the cross-cutting entries "
                    "(faster; the killed-by-two figure is then not meaningful)")
    a = ap.parse_args()
    # The scratch copy has no .git: the runs record the checkout's revision instead, as
    # fleet.shards needs one (SYNCROLL_GIT_REV is what `syncroll run` records when set).
    if not os.environ.get("SYNCROLL_GIT_REV"):
        try:
            rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                                 text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            rev = "mutate-scratch"
        os.environ["SYNCROLL_GIT_REV"] = rev or "mutate-scratch"
    # SIGTERM (a CI timeout, kill PID) unwinds like ^C, so the applied mutant is reverted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.jobs < 1 or a.timeout < 1:
        die("--jobs and --timeout must be positive")
    # A list named twice (make mutate MUTATE_ARGS="--mutants tests/mutants/blind.json") runs once.
    lists = []
    for path in a.mutants or [LIST]:
        if os.path.realpath(path) not in [os.path.realpath(q) for q in lists]:
            lists.append(path)
    a.mutants = lists
    if len(set(os.path.basename(p) for p in a.mutants)) != len(a.mutants):
        die("--mutants: two lists of the same file name would write one result file")
    chosen = select_mutants([(p, load_list(p)) for p in a.mutants], a)

    if a.list:
        for path, doc, muts in chosen:
            counts = check_patterns(doc, ROOT)
            if len(chosen) > 1:
                print("%s:" % os.path.relpath(path, os.getcwd()))
            for m in muts:
                n = counts[m["id"]]
                state = ("equivalent" if m.get("equivalent") else "ok") if n == 1 else \
                    "STALE (%s)" % ("file missing" if n < 0 else "%d matches" % n)
                print("%-28s %-10s %-4s %-32s %s" % (m["id"], m["module"],
                                                     "core" if m.get("core", True) else "-",
                                                     m["file"], state))
            print("%d mutants" % len(muts))
        return 0

    # The scratch build runs from inside the scratch tree: a relative folder would name another.
    a.scratch = os.path.abspath(a.scratch)
    os.makedirs(a.scratch, exist_ok=True)
    lock = open(os.path.join(a.scratch, "lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        die("another mutation run is using %s" % a.scratch, 1)
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    log = open(os.path.join(a.scratch, "mutate.log"), "w", encoding="utf-8")
    t_start = time.monotonic()
    sc = Scratch(a.scratch, a.jobs, log)
    print("mutate: preparing the scratch tree %s" % a.scratch, flush=True)
    sc.prepare()

    # The unmutated tree must pass every entry any selected mutant will run.
    needed = set()
    for _, doc, muts in chosen:
        if muts:
            needed |= set(select(sc.tests, "" if a.no_cross else doc["cross"],
                                 *[m["tests"] for m in muts]))
    needed = sorted(needed)
    ok, out, _ = sc.build_targets(sc.targets(needed))
    if not ok:
        die("building the unmutated tree failed:\n" + out[-3000:], 1)
    print("mutate: baseline: %d ctest entries on the unmutated tree" % len(needed), flush=True)
    base = sc.run_tests(needed, a.timeout)
    broken = sorted(t for t, (s, _) in base.items() if s != "pass")
    if broken:
        print("mutate: the unmutated tree fails %s (see %s); fix that first" %
              (", ".join(broken), os.path.join(a.scratch, "mutate.log")))
        return 1

    rc = 0
    for (path, doc, muts), jpath in zip(chosen, json_paths(a)):
        rel = os.path.relpath(path, os.getcwd())
        if not muts:
            print("mutate: %s: no mutant selected" % rel, flush=True)
            continue
        if len(chosen) > 1:
            print("mutate: %s (%d mutants)" % (rel, len(muts)), flush=True)
        t0 = time.monotonic()
        results = run_list(sc, doc, muts, a)
        rc |= report(results, muts, a, time.monotonic() - t0, path, jpath)
    if len(chosen) > 1:
        print("mutate: %.0f s in all" % (time.monotonic() - t_start))
    return rc


def report(results, muts, a, secs, list_path, json_path):
    by = {s: [r for r in results if r["status"] == s]
          for s in ("killed", "survived", "stale", "equivalent", "build_error")}
    print()
    print("%-28s %-10s %-11s %s" % ("mutant", "module", "status", "killed by"))
    for r in results:
        note = ""
        if r["status"] == "killed" and not r.get("own_subset_killed"):
            note = "  (not by its own subset)"
        if r["status"] == "stale":
            note = "  pattern matches %d times in %s" % (r["matches"], r["file"])
        if r["status"] == "equivalent":
            note = "  " + r["equivalent"]
        print("%-28s %-10s %-11s %s%s" % (r["id"], r["module"], r["status"].upper(),
                                          ", ".join(r["killed_by"]) or "-", note))
    modules = {}
    for r in results:
        m = modules.setdefault(r["module"], {"mutants": 0, "killed": 0, "survived": 0,
                                             "equivalent": 0, "other": 0})
        m["mutants"] += 1
        key = r["status"] if r["status"] in ("killed", "survived", "equivalent") else "other"
        m[key] += 1
    print()
    print("%-14s %7s %6s %8s %10s %5s" % ("module", "mutants", "killed", "survived", "equivalent",
                                          "other"))
    for name, m in modules.items():
        print("%-14s %7d %6d %8d %10d %5d" % (name, m["mutants"], m["killed"], m["survived"],
                                              m["equivalent"], m["other"]))
    counted = [r for r in results if r["status"] != "equivalent"]
    core = [r for r in counted if r["core"]]
    core_two = [r for r in core if len(r["killed_by"]) >= 2]
    rate = 100.0 * len(by["killed"]) / len(counted) if counted else 0.0
    two = 100.0 * len(core_two) / len(core) if core else 0.0
    print()
    line = "%d killed, %d survived, %d stale" % (len(by["killed"]), len(by["survived"]),
                                                 len(by["stale"]))
    if by["build_error"]:
        line += ", %d did not build" % len(by["build_error"])
    if by["equivalent"]:
        line += " (%d equivalent, not counted)" % len(by["equivalent"])
    print(line)
    print("kill rate %.1f %% of %d mutants; %.1f %% of core mutants killed by >= 2 tests "
          "(%d of %d)" % (rate, len(counted), two, len(core_two), len(core)))
    print("%.0f s on %d jobs" % (secs, a.jobs))
    out = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join(["tests/mutate.py"] + sys.argv[1:]),
        "mutants_file": os.path.relpath(list_path, ROOT),
        "seconds": round(secs, 1),
        "jobs": a.jobs,
        "killed": len(by["killed"]),
        "survived": len(by["survived"]),
        "stale": len(by["stale"]),
        "equivalent": len(by["equivalent"]),
        "build_errors": len(by["build_error"]),
        "kill_rate_percent": round(rate, 1),
        "core_killed_by_two_percent": round(two, 1),
        "modules": modules,
        "results": results,
    }
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("result: %s" % os.path.relpath(json_path, os.getcwd()))
    return 1 if by["survived"] or by["stale"] or by["build_error"] else 0


if __name__ == "__main__":
    sys.exit(main())
