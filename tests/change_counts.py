#!/usr/bin/env python3
"""ARCHITECTURE.md "Where a change goes" counted on the tree (ctest arch.change_counts).

For each extension point checked here, an existing entry is grepped for (a probe) in the files
that would register a new one; every file found must be named in the point's bullet, and the
bullet's "(N files)" must equal the number of files found (a file that is itself an instance of a
template the bullet names, such as report_junit.c of `harness/report/report_<name>.c`, counts as
the template). Usage: change_counts.py SOURCE_DIR. Exit 0 when every count holds, 1 otherwise.
"""
import os
import re
import sys

# (bullet title, probe regex, where to look: folders or files under the source folder)
PROBES = [
    ("A new step kind",
     r"SR_STEP_WAIT\b|\bparse_wait\b|\bwrite_wait\b|\bstep_wait\b|steps\.wait\b",
     ["harness", "lib", "scenarios/FORMAT.md"]),
    ("A new reporter", r"SR_REPORT_JUNIT\b|\bsr_report_junit\b", ["harness/report"]),
    ("A new dialect", r"SR_DIALECT_DYNAMO\b|\"dynamo\"|`dynamo`",
     ["harness", "lib", "docs/reference/engine.md"]),
    ("A new engine fault kind", r"SR_FK_EXPERT_OUT_OF_RANGE\b", ["harness", "lib"]),
]


def files_under(root, scope):
    full = os.path.join(root, scope)
    if os.path.isfile(full):
        yield scope
        return
    for dirpath, _, names in os.walk(full):
        for n in sorted(names):
            if n.endswith((".c", ".h", ".md")):
                yield os.path.relpath(os.path.join(dirpath, n), root)


def bullets(text):
    sec = text.split("## Where a change goes", 1)[1].split("\n## ", 1)[0]
    out = {}
    for b in re.split(r"\n- ", "\n" + sec)[1:]:
        m = re.match(r"\*\*(.+?)\*\*", b)
        if m:
            c = re.search(r"\((\d+) files?\)", b.split(":", 1)[0])
            out[m.group(1)] = (b, int(c.group(1)) if c else None)
    return out


def named(bullet, path):
    """The name under which the bullet names path: itself, or a <name> template it instantiates."""
    if f"`{path}`" in bullet:
        return path
    for t in re.findall(r"`([^`]*<name>[^`]*)`", bullet):
        if re.fullmatch(re.escape(t).replace(re.escape("<name>"), r"[a-z0-9_-]+"), path):
            return t
    return None


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    text = open(os.path.join(root, "ARCHITECTURE.md"), encoding="utf-8").read()
    found_bullets = bullets(text)
    problems = []
    for title, probe, scopes in PROBES:
        rx = re.compile(probe)
        hits = sorted({f for s in scopes for f in files_under(root, s)
                       if rx.search(open(os.path.join(root, f), encoding="utf-8").read())})
        if title not in found_bullets:
            problems.append(f"ARCHITECTURE.md has no bullet **{title}**")
            continue
        bullet, count = found_bullets[title]
        names = set()
        for f in hits:
            n = named(bullet, f)
            if n is None:
                problems.append(f"**{title}**: {f} registers an existing one ({probe}) but the "
                                "bullet does not name it")
            names.add(n or f)
        if count != len(names):
            problems.append(f"**{title}**: the bullet says {count} files, the tree has "
                            f"{len(names)}: {', '.join(sorted(names))}")
        else:
            print(f"ok: {title}: {count} files: {', '.join(sorted(names))}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
