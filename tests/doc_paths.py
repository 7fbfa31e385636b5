#!/usr/bin/env python3
"""The docs cannot drift: every path, link, anchor and section they cite exists
(ctest arch.doc_paths; ctest arch.doc_paths_selftest runs --selftest).

Reads the repository's Markdown files (git's tracked and untracked-but-not-ignored files when the
tree is a git checkout, else every file outside build folders) and the comments of its C, Python,
shell and CMake files, and checks five rules. Each failure is printed as file:line and the cause.

1. Source paths: a word of a Markdown file starting with lib/, harness/, tests/, bench/, fuzz/,
   scenarios/, fixtures/ or .ci/ names a file or folder of the tree. `{a,b}` alternatives and `*`
   globs are expanded; a name without an extension (a module such as lib/sr_delta, a program such
   as bench/bench_sync) counts if a file of that stem exists; a placeholder such as
   tests/test_<module>.c is skipped. Inside code (backticks and fenced blocks) only lib/ and
   harness/ paths are checked: elsewhere code shows commands whose scenario and fixture names are
   invented examples.
2. Links: a Markdown link `[text](target)` or reference definition `[id]: target` with a relative
   target resolves, from the linking file's folder, to a file or folder inside the repository (its
   real path under the root); a `#anchor` (also alone, for the file itself) is the GitHub slug of
   one of the target's headings: lowercase, every character but letters, digits, '_', '-' and
   spaces dropped, spaces turned into '-', the second of two equal slugs suffixed -1, the third
   -2, and so on.
3. Sections: a reference `FILE.md §N` (also `FILE.md section N`, `FILE.md Appendix X`, and lists
   such as `§8.2, §8.3` or ranges `§1.2-1.4` after one file name), in Markdown or in a source
   comment, names a Markdown file of the repository with a heading numbered N: "## 5. ...",
   "### 5a. ...", "### 1.2 ...", "## Appendix A ...". A section cited after a word that names
   some other document (`DESIGN §4`, `some-contract §1.2`, `client.h §1.7`) fails too.
4. Markdown names: every `*.md` name, in Markdown or in a source comment, names a file of the
   repository: a path from the root, a path from the citing file's folder, or a base name that
   exactly one file of the repository has.
5. Nothing leaves the repository: a `../` path that climbs above the root, or an absolute path
   under /work, fails wherever it is written.

A FILE.md is found by the same rule as in 4. Fails naming file:line, so a document that moves, a
section that is renumbered or a reference to a document outside the repository fails `make test`.

Usage: doc_paths.py SOURCE_DIR
       doc_paths.py --selftest   (breaks each rule once in a temporary tree and expects the
                                  checker to name every file:line; a correct tree must pass)
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

PATH = re.compile(r"(?<![\w/.-])((?:lib|harness|tests|bench|fuzz|scenarios|fixtures|\.ci)/"
                  r"[A-Za-z0-9_.{},*/-]*)")
SKIP_DIRS = {".git", "build", "build-sanitize", "build-fuzz", "node_modules"}
# Folders of generated output: their own files count (reports/README.md), their subfolders not.
SHALLOW_DIRS = {"reports"}
SOURCE_EXT = (".c", ".h", ".py", ".sh")
SOURCE_NAMES = ("CMakeLists.txt",)

# A Markdown name: path characters ending in ".md", not part of a longer word or a format string.
MD_NAME = re.compile(r"(?<![\w/.%{}<>*-])((?:\.{1,2}/)*[\w{},.-]+(?:/[\w{},.-]+)*\.md)(?![\w])")
# A section list after a Markdown name: §N, section N, Appendix X, with , / and "and" lists.
SECTION_ITEM = r"(?:§\s?[0-9][\w.]*|section [0-9][\w.]*|Appendix [A-Z])"
SECTION_REF = re.compile(r"(?<![\w/.-])([\w./-]+\.md)`?\s*,?\s+(" + SECTION_ITEM +
                         r"(?:(?:\s*[,/]\s*|\s+and\s+|-)(?:" + SECTION_ITEM +
                         r"|[0-9][\w.]*(?![\w.])))*)")
LINK = re.compile(r"(?<!\\)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
# A section reference after a word that names some document (a capitalised name, a name with a
# hyphen, dot or slash) other than a Markdown file of the repository.
DOC_SECTION = re.compile(r"(?<![\w./-])([A-Za-z][\w./-]*)`?\s+"
                         r"(?:§\s?[0-9]|section [0-9]|Appendix [A-Z])")
# C comments, and the string and character literals a comment marker may hide in.
C_TOKEN = re.compile(r"/\*.*?(?:\*/|\Z)|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?",
                     re.S)
OUTSIDE_REL = re.compile(r"(?<![\w.-])((?:\.\./)+[\w./-]*)")
OUTSIDE_ABS = re.compile(r"(?<![\w./-])(/work(?:/[\w.-]*)*)")


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


def repo_files(root):
    """Relative paths of the repository's files (git's view when it is a checkout)."""
    if os.path.exists(os.path.join(root, ".git")):
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, text=True)
        if out.returncode == 0:
            return sorted(n for n in set(out.stdout.split("\n")) if n and
                          os.path.isfile(os.path.join(root, n)))
    found = []
    for dirpath, dirs, names in os.walk(root):
        if os.path.relpath(dirpath, root) in SHALLOW_DIRS:
            dirs[:] = []
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for n in names:
            found.append(os.path.relpath(os.path.join(dirpath, n), root))
    return sorted(found)


def slug_words(text):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading: its text
    text = text.strip().lower()
    return "".join(c for c in text if c.isalnum() or c in "_- ").replace(" ", "-")


class Tree:
    """The repository's files, and the headings of its Markdown files (read once each)."""

    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.files = repo_files(self.root)
        self.fileset = set(self.files)
        self.by_base = {}
        for f in self.files:
            self.by_base.setdefault(os.path.basename(f), []).append(f)
        self._headings = {}

    def headings(self, rel):
        """(slugs, section numbers) of a Markdown file."""
        if rel not in self._headings:
            slugs, numbers, seen = set(), set(), {}
            for _, line, in_fence in lines_of(os.path.join(self.root, rel)):
                m = None if in_fence else re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                text = m.group(1)
                s = slug_words(text)
                n = seen.get(s, 0)
                seen[s] = n + 1
                slugs.add(s if n == 0 else f"{s}-{n}")
                num = re.match(r"(Appendix [A-Z]|[0-9][\w.]*)", text)
                if num:
                    numbers.add(num.group(1).rstrip("."))
            self._headings[rel] = (slugs, numbers)
        return self._headings[rel]

    def find_md(self, name, citing):
        """The repository path a Markdown name stands for, or None."""
        for cand in (name, os.path.join(os.path.dirname(citing), name)):
            c = os.path.normpath(cand)
            if c in self.fileset:
                return c
        if "/" not in name:
            hits = self.by_base.get(name, [])
            if len(hits) == 1:
                return hits[0]
        else:  # a path from a folder below the root: reference/skyrl.md
            hits = [f for f in self.files if f.endswith("/" + os.path.normpath(name))]
            if len(hits) == 1:
                return hits[0]
        return None

    def inside(self, path):
        real = os.path.realpath(path)
        return real == self.root or real.startswith(self.root + os.sep)


def lines_of(path):
    """(line number, text, inside a fenced block) of a Markdown file."""
    in_fence = False
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                yield lineno, line, True
                continue
            yield lineno, line, in_fence


def comments_of(path):
    """(line number, comment text) of a source file's comments, one entry per line."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    out = []
    if path.endswith((".c", ".h")):
        line, pos = 1, 0
        for m in C_TOKEN.finditer(text):
            line += text.count("\n", pos, m.start())
            pos = m.start()
            tok = m.group(0)
            if tok.startswith("/*"):
                for k, part in enumerate(tok[2:-2].split("\n")):
                    out.append((line + k, part))
            elif tok.startswith("//"):
                out.append((line, tok[2:]))
    else:  # Python, shell, CMake: '#' comments (not inside a quoted string on the line)
        for lineno, raw in enumerate(text.split("\n"), 1):
            quote = None
            for k, c in enumerate(raw):
                if quote:
                    if c == quote:
                        quote = None
                elif c in "\"'":
                    quote = c
                elif c == "#" and (k == 0 or raw[k - 1] in " \t"):
                    if not raw.startswith("#!"):
                        out.append((lineno, raw[k + 1:]))
                    break
    return out


def strip_code_spans(line):
    return re.sub(r"`[^`]*`", "", line)


def check_text(tree, rel, lineno, text, report, markdown):
    """Rules 3, 4 and 5 on one line of text of file `rel`."""
    where = f"{rel}:{lineno}"
    for m in OUTSIDE_REL.finditer(text):
        p = m.group(1)
        if not tree.inside(os.path.join(tree.root, os.path.dirname(rel), p)):
            report(f"{where}: path outside the repository: {p}")
    for m in OUTSIDE_ABS.finditer(text):
        report(f"{where}: path outside the repository: {m.group(1)}")
    for m in MD_NAME.finditer(text):
        name = m.group(1)
        if name.startswith("../") and not tree.inside(
                os.path.join(tree.root, os.path.dirname(rel), name)):
            continue  # already reported as outside
        for q in expand(name):
            if not tree.find_md(q, rel):
                report(f"{where}: no such Markdown file in the repository: {q}")
    for m in DOC_SECTION.finditer(text):
        name = m.group(1)
        if not name.endswith(".md") and (re.search(r"[-._/]", name) or
                                         (name.isupper() and len(name) >= 3)):
            report(f"{where}: section of a document that is not a Markdown file of the "
                   f"repository: {m.group(0)}")
    for m in SECTION_REF.finditer(text):
        name, items = m.group(1), m.group(2)
        target = tree.find_md(name, rel)
        if not target:
            continue  # reported by the name rule
        _, numbers = tree.headings(target)
        wanted = re.findall(r"Appendix [A-Z]|[0-9][\w.]*", items)
        for w in wanted:
            w = w.rstrip(".")
            if w not in numbers:
                report(f"{where}: {target} has no section numbered {w}")


def check_links(tree, rel, lineno, line, report):
    """Rule 2 on one Markdown line (code spans removed)."""
    targets = [m.group(1) for m in LINK.finditer(strip_code_spans(line))]
    m = REFDEF.match(line)
    if m:
        targets.append(m.group(1))
    for t in targets:
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t):
            continue  # a URL (https:, mailto:)
        path, _, anchor = t.partition("#")
        if path.startswith("/"):
            report(f"{rel}:{lineno}: link to an absolute path: {t}")
            continue
        full = os.path.join(tree.root, os.path.dirname(rel), path) if path else \
            os.path.join(tree.root, rel)
        if not tree.inside(full):
            report(f"{rel}:{lineno}: link leaves the repository: {t}")
            continue
        if not os.path.exists(full):
            report(f"{rel}:{lineno}: dead link: {t}")
            continue
        if anchor:
            target = os.path.relpath(os.path.realpath(full), tree.root)
            if not target.endswith(".md") or anchor not in tree.headings(target)[0]:
                report(f"{rel}:{lineno}: dead anchor: {t}")


def check(root):
    """Every finding of the five rules, as printed lines; and the file counts."""
    tree = Tree(root)
    found = []
    md = [f for f in tree.files if f.endswith(".md")]
    src = [f for f in tree.files if f.endswith(SOURCE_EXT) or os.path.basename(f) in SOURCE_NAMES]
    for rel in md:
        for lineno, line, in_fence in lines_of(os.path.join(tree.root, rel)):
            for m in PATH.finditer(line):
                p = m.group(1)
                in_code = in_fence or line[:m.start()].count("`") % 2 == 1
                if in_code and not p.startswith(("lib/", "harness/")):
                    continue
                if "<" in line[m.end():m.end() + 1] or p.endswith(("-", "_")):
                    continue  # a placeholder such as tests/test_<module>.c
                if not exists(tree.root, p):
                    found.append(f"{rel}:{lineno}: no such path: {p}")
            if not in_fence:
                check_links(tree, rel, lineno, line, found.append)
            check_text(tree, rel, lineno, line, found.append, True)
    for rel in src:
        for lineno, text in comments_of(os.path.join(tree.root, rel)):
            check_text(tree, rel, lineno, text, found.append, False)
    return found, len(md), len(src)


def main_check(root):
    found, nmd, nsrc = check(root)
    for f in found:
        print(f)
    print(f"doc paths: {nmd} Markdown files, {nsrc} source files, {len(found)} finding(s)")
    return 1 if found else 0


GOOD = {
    "README.md": "# Demo\n\nSee [the guide](docs/guide.md#2-second-part), [twice](docs/guide.md#"
                 "same-1),\n[here](#demo) and docs/guide.md §1, §2 and Appendix A; lib/sr_x.c.\n",
    "docs/guide.md": "# Guide\n\n## 1. First\n\n## 2. Second part\n\n## Same\n\n## Same\n\n"
                     "## Appendix A: more\n\nBack to [the start](../README.md).\n",
    "lib/sr_x.c": "/* The demo (docs/guide.md §2, guide.md Appendix A; README.md). */\n"
                  "static const char *f = \"%s.md\";\n",
    "tests/run.sh": "#!/bin/sh\n# See docs/guide.md section 1.\necho '# not a comment GONE.md'\n",
}
BROKEN = {
    "bad/link.md": ("# Bad\n\nA [dead link](nowhere.md).\n", 3),
    "bad/anchor.md": ("# Bad\n\nA [dead anchor](../docs/guide.md#3-third).\n", 3),
    "bad/section.md": ("# Bad\n\nAs docs/guide.md §7 says.\n", 3),
    "bad/name.md": ("# Bad\n\nSee `reference/missing-catalog.md`.\n", 3),
    "bad/outside.md": ("# Bad\n\nsee ../../sibling/NOTES.md for more.\n", 3),
    "bad/abs.md": ("# Bad\n\nRead /work/sibling/x.txt.\n", 3),
    "bad/leave.md": ("# Bad\n\nA [link out](../../elsewhere/x.md).\n", 3),
    "bad/path.md": ("# Bad\n\nThe module lib/sr_nothing.c.\n", 3),
    "lib/sr_bad.h": ("#ifndef X\n/*\n * The old design (see NOTES.md §4).\n */\n", 3),
    "lib/sr_bad2.c": ("int x; /* docs/guide.md §9 */\n", 1),
    "tests/bad.py": ("import os\n\n# as ../../sibling/NOTES.md says\n", 3),
    "bad/doc.md": ("# Bad\n\nAs the-contract §1.2 and NOTES §4 say.\n", 3),
    "lib/sr_bad3.h": ("/* The body of old-contract section 3. */\n", 1),
}


def write_tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


def selftest():
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        good_root = os.path.join(tmp, "good")
        write_tree(good_root, GOOD)
        found, _, _ = check(good_root)
        if found:
            print("selftest: a correct tree was refused:\n  " + "\n  ".join(found))
            bad += 1
        broken_root = os.path.join(tmp, "broken")
        write_tree(broken_root, GOOD)
        write_tree(broken_root, {rel: text for rel, (text, _) in BROKEN.items()})
        found, _, _ = check(broken_root)
        for rel, (_, line) in sorted(BROKEN.items()):
            if not any(f.startswith(f"{rel}:{line}: ") for f in found):
                print(f"selftest: the checker did not name {rel}:{line}")
                bad += 1
        named = {f.split(":")[0] for f in found}
        if not named <= set(BROKEN):
            print(f"selftest: findings in correct files: {sorted(named - set(BROKEN))}")
            bad += 1
        for f in found:
            print(f"  found: {f}")
    print(f"doc paths selftest: {len(BROKEN)} broken cases, {bad} failure(s)")
    return 1 if bad else 0


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    return main_check(sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
