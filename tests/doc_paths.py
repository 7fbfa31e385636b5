#!/usr/bin/env python3
"""Every path the docs name exists (ctest arch.doc_paths).

Reads the project's Markdown files (README.md, ARCHITECTURE.md and every *.md below the source
tree, build folders aside) and checks that each source path they write -- a word starting with
lib/, harness/, tests/, bench/, fuzz/, scenarios/, fixtures/ or .ci/ -- names a file or folder
of the tree. `{a,b}` alternatives and `*` globs are expanded; a name without an extension
(a module such as lib/sr_delta, a program such as bench/bench_sync) counts if a file of that
stem exists; a placeholder such as tests/test_<module>.c is skipped. Inside code (backticks and
fenced blocks) only lib/ and harness/ paths are checked: elsewhere code shows commands whose
scenario and fixture names are invented examples. Fails naming file:line and the stale path, so a
move that forgets the docs fails `make test`.

Usage: doc_paths.py SOURCE_DIR
"""
import glob
import os
import re
import sys

PATH = re.compile(r"(?<![\w/.-])((?:lib|harness|tests|bench|fuzz|scenarios|fixtures|\.ci)/"
                  r"[A-Za-z0-9_.{},*/-]*)")
SKIP_DIRS = {".git", "build", "build-sanitize", "build-fuzz", "reports", "node_modules"}


def expand(p):
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand(p[:m.start()] + alt + p[m.end():]))
    return out


def exists(root, p):
    p = p.rstrip(".,:;)")
    if not p or p.endswith("/") and os.path.isdir(os.path.join(root, p)):
        return True
    for q in expand(p):
        q = q.rstrip("/")
        if "*" in q:
            if glob.glob(os.path.join(root, q)):
                continue
            return False
        full = os.path.join(root, q)
        if not os.path.exists(full):
            if "." in os.path.basename(q) or not glob.glob(glob.escape(full) + ".*"):
                return False
    return True


def markdown_files(root):
    if os.path.isdir(os.path.join(root, ".git")):
        import subprocess
        out = subprocess.run(["git", "-C", root, "ls-files", "*.md"], capture_output=True,
                             text=True)
        if out.returncode == 0:
            for name in out.stdout.split():
                yield os.path.join(root, name)
            return
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for n in names:
            if n.endswith(".md"):
                yield os.path.join(dirpath, n)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    bad = 0
    files = sorted(markdown_files(root))
    for f in files:
        in_fence = False
        with open(f, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if line.lstrip().startswith("```"):
                    in_fence = not in_fence
                    continue
                for m in PATH.finditer(line):
                    p = m.group(1)
                    in_code = in_fence or line[:m.start()].count("`") % 2 == 1
                    if in_code and not p.startswith(("lib/", "harness/")):
                        continue
                    if "<" in line[m.end():m.end() + 1] or p.endswith(("-", "_")):
                        continue  # a placeholder such as tests/test_<module>.c
                    if not exists(root, p):
                        print(f"{os.path.relpath(f, root)}:{lineno}: no such path: {p}")
                        bad += 1
    print(f"doc paths: {len(files)} Markdown files, {bad} stale path(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
