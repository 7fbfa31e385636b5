#!/usr/bin/env python3
"""Every runnable command block of the user docs runs and ends as the docs say (ctest docs.commands).

Reads README.md and docs/guide/*.md and runs each fenced block whose info string is `sh`
(blocks marked `console`, `text` or anything else are shown, not run) with bash -eo pipefail,
one block after another in the order of each file, in a scratch folder that holds the
repository's scenarios/, fixtures/, examples/ and python/ (as symbolic links) and a writable reports/,
with the built `syncroll` first on PATH. A block's first line may declare the exit status it
ends with, `# exit: N` (default 0): a quickstart that reproduces a bug ends with 1. Blocks of one
file share the scratch folder, so a later block may read what an earlier one wrote; each file
gets its own. A block may also name files it must leave behind, `# creates: PATH ...`.

The setup commands (`make run`, `make test`, `make deps`) are not run here: they are what runs
this test. A block that calls them fails this test, so the docs mark them `console`.

With `--python3 PY`, `python3` in the blocks is PY (a link to it comes first on PATH): the
Python that `make deps` installs Debian's python3-numpy and python3-pytest for, which a fresh
Debian machine has as its only python3, while a developer's PATH may name another one first.

Usage: doc_commands.py SOURCE_DIR BUILD_HARNESS_DIR [--python3 PY] [--list]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
SETUP = re.compile(r"(^|[;&|\s])make\s+(run|test|deps)\b")


def blocks(path):
    """Yields (first line number, info string, text) of each fenced block of a Markdown file."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.readlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        info, start, body = m.group(2), i + 1, []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i])
            i += 1
        i += 1
        yield start, info, "".join(body)


def doc_files(root):
    files = [os.path.join(root, "README.md")]
    guide = os.path.join(root, "docs", "guide")
    if os.path.isdir(guide):
        files += sorted(os.path.join(guide, n) for n in os.listdir(guide) if n.endswith(".md"))
    return files


def scratch(root):
    d = tempfile.mkdtemp(prefix="syncroll-doc-")
    for name in ("scenarios", "fixtures", "examples", "python"):
        if os.path.isdir(os.path.join(root, name)):
            os.symlink(os.path.join(root, name), os.path.join(d, name))
    os.mkdir(os.path.join(d, "reports"))
    return d


def main():
    args = [a for a in sys.argv[1:] if a != "--list"]
    python3 = None
    if "--python3" in args:
        i = args.index("--python3")
        if i + 1 >= len(args):
            print(__doc__, file=sys.stderr)
            return 2
        python3 = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root, harness = os.path.abspath(args[0]), os.path.abspath(args[1])
    path = harness + os.pathsep + os.environ.get("PATH", "")
    if python3:
        pybin = tempfile.mkdtemp(prefix="doc-python3-")
        os.symlink(python3, os.path.join(pybin, "python3"))
        path = pybin + os.pathsep + path
    env = dict(os.environ, PATH=path)
    env.pop("CI", None)  # the docs' commands read CI variables only where a block sets them
    bad = ran = 0
    for f in doc_files(root):
        if not os.path.exists(f):
            continue
        rel = os.path.relpath(f, root)
        work = None
        for line, info, text in blocks(f):
            if info != "sh":
                continue
            if SETUP.search(text):
                print(f"{rel}:{line}: a runnable block calls a setup command (mark it console)")
                bad += 1
                continue
            want = 0
            m = re.match(r"\s*#\s*exit:\s*(\d+)", text)
            if m:
                want = int(m.group(1))
            creates = []
            for cm in re.finditer(r"^\s*#\s*creates:\s*(.+)$", text, re.M):
                creates += cm.group(1).split()
            if "--list" in sys.argv:
                print(f"{rel}:{line}: exit {want}")
                continue
            if work is None:
                work = scratch(root)
            p = subprocess.run(["bash", "-eo", "pipefail", "-c", text], cwd=work, env=env,
                               capture_output=True, text=True, timeout=600)
            ran += 1
            if p.returncode != want:
                print(f"{rel}:{line}: exited {p.returncode}, the docs say {want}")
                print("  " + "\n  ".join((p.stdout + p.stderr).strip().splitlines()[-15:]))
                bad += 1
            for c in creates:
                if not os.path.exists(os.path.join(work, c)):
                    print(f"{rel}:{line}: left no {c}")
                    bad += 1
        if work:
            shutil.rmtree(work, ignore_errors=True)
    if python3:
        shutil.rmtree(pybin, ignore_errors=True)
    print(f"doc commands: {ran} block(s) run, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
