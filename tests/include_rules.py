#!/usr/bin/env python3
"""The architecture's rules, checked from the sources (ctest arch.include_rules).

Reads every #include "..." of lib/ and harness/ and every non-static function that a .c file
defines and another .c file calls, and fails, naming file:line, when:

1. a folder includes a folder it may not (the table LAYERS below: arrows point one way, down);
2. two .c files of one folder call each other's functions, directly or around a longer circle
   (a folder's files must form a caller -> callee order, cut by idea, not by length);
3. an #include "..." names no file of the tree (a stale path after a move);
4. a folder-private header (`*_priv.h`, the one suffix for them) is included from another folder;
5. two files under harness/ share a name (`#include "faults.h"` must mean one file, and a file's
   name says where it lives).

Usage: include_rules.py SOURCE_DIR [--explain]. Exit 0 when every rule holds, 1 otherwise.
See ARCHITECTURE.md for the module map these rules encode.
"""
import os
import re
import sys

# Which folders each folder may include (besides itself). lib/ is the ground floor; harness
# folders are listed from the bottom up. "." is harness/ itself (main.c).
LAYERS = {
    "lib": set(),
    "harness/spec": {"lib"},
    "harness/report": {"lib"},
    "harness/client": {"lib", "harness/spec"},
    "harness/engine": {"lib", "harness/spec"},
    # The proxy applies the engine's fault selection (engine/engine_faults.h) to real traffic.
    "harness/proxy": {"lib", "harness/spec", "harness/engine"},
    "harness/scenario": {"lib", "harness/spec", "harness/client", "harness/report"},
    "harness/sync": {"lib", "harness/spec", "harness/client", "harness/report",
                     "harness/scenario"},
    # The replay step judges a capture (proxy/capture.h) played back in-process
    # (proxy/replay_serve.h).
    "harness/run": {"lib", "harness/spec", "harness/client", "harness/report",
                    "harness/scenario", "harness/sync", "harness/proxy"},
    "harness/cli": {"lib", "harness/spec", "harness/client", "harness/report",
                    "harness/scenario", "harness/sync", "harness/run", "harness/engine",
                    "harness/proxy"},
    "harness": {"harness/cli", "lib", "harness/run", "harness/client"},
}
# The commands that start engines are the only trainer-side files that may include engine/.
ENGINE_COMMANDS = {"harness/cli/cmd_engine.c", "harness/cli/cmd_serve.c"}
# main.c takes only these headers from the folders LAYERS lets it reach (ARCHITECTURE.md).
MAIN_HEADERS = {"harness/cli/commands.h", "harness/run/procs.h", "harness/client/client.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
INCLUDE_ANY = re.compile(r'^\s*#\s*include\b')
FUNC_DEF = re.compile(r'^(?!static\b)(?:[A-Za-z_][\w \t\*]*?[\s\*])?([A-Za-z_]\w*)\s*\(([^;]*)$')
ATTRIBUTE = re.compile(r'__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*')
IDENT = re.compile(r'[A-Za-z_]\w*')


C_NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def strip_c(text):
    """Comments, strings and char literals blanked (newlines kept, so line numbers hold)."""
    return C_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def strip_comments(text):
    """Block and line comments blanked, newlines kept; string literals left as they are."""
    return re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)


def folder_of(path):
    d = os.path.dirname(path)
    return d if d else "."


def sources(root):
    for top in ("lib", "harness"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    full = os.path.join(dirpath, name)
                    yield os.path.relpath(full, root)


def resolve(root, includer, inc):
    for base in (os.path.dirname(includer), "harness", "lib"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def check_layers(root, files, problems):
    for f in files:
        src_folder = folder_of(f)
        allowed = LAYERS.get(src_folder)
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            text = fh.read()
        # Comments are blanked (a commented-out include is no arrow); the include's own quoted
        # name is read from the raw line.
        raw_lines = text.split("\n")
        for lineno, line in enumerate(strip_comments(text).split("\n"), 1):
            if not INCLUDE_ANY.match(line):
                continue
            m = INCLUDE.match(raw_lines[lineno - 1])
            if not m:
                problems.append(f"{f}:{lineno}: an #include of a macro: the rules cannot be "
                                "checked; name the header literally")
                continue
            target = resolve(root, f, m.group(1))
            if target is None:
                if "<" in raw_lines[lineno - 1]:
                    continue  # a system or dependency header
                problems.append(f'{f}:{lineno}: #include "{m.group(1)}" names no file of '
                                "lib/ or harness/ (stale path?)")
                continue
            dst_folder = folder_of(target)
            if dst_folder == src_folder:
                continue
            if target.endswith("_priv.h"):
                problems.append(f'{f}:{lineno}: #include "{m.group(1)}": {target} is private to '
                                f"{dst_folder}/ (a *_priv.h header is included only there)")
                continue
            if allowed is None:
                problems.append(f"{f}:{lineno}: folder {src_folder}/ is not in the module "
                                "map (tests/include_rules.py LAYERS, ARCHITECTURE.md)")
                break
            ok = dst_folder in allowed
            if dst_folder == "harness/engine" and src_folder == "harness/cli":
                ok = f in ENGINE_COMMANDS
            if src_folder == "harness" and dst_folder != "lib":
                ok = target in MAIN_HEADERS
            if not ok:
                problems.append(f'{f}:{lineno}: #include "{m.group(1)}": {src_folder}/ may '
                                f"not include {dst_folder}/ ({target})")


def check_names(files, problems):
    """No two files under harness/ share a base name; private headers are *_priv.h."""
    seen = {}
    for f in files:
        if f.startswith("harness/"):
            seen.setdefault(os.path.basename(f), []).append(f)
    for f in files:
        if f.endswith("_impl.h"):
            problems.append(f"{f}: a folder-private header is named *_priv.h (one suffix for them)")
    for name, paths in sorted(seen.items()):
        if len(paths) > 1:
            problems.append(f"{', '.join(paths)}: the name {name} is used twice under harness/ "
                            "(name a file after its folder, e.g. engine_faults.c)")


def defined_functions(text):
    """Non-static functions defined at file scope (name -> line)."""
    defs, lines, depth = {}, text.split("\n"), 0
    for i, line in enumerate(lines):
        if depth == 0 and not line.startswith((" ", "\t", "#", "}")):
            line = ATTRIBUTE.sub("", line)
            prev = lines[i - 1].strip() if i else ""
            m = FUNC_DEF.match(line)
            if m and re.match(r"^(static|static\s.*[\w\*])$", prev):
                m = None  # "static int" on the line above: a file-local function
            if m and m.group(1) not in ("if", "while", "for", "switch", "return", "sizeof"):
                # A definition: the next brace after the parameter list opens a body, no ';'.
                rest = "\n".join(lines[i:i + 12])
                close = rest.find(")")
                brace, semi = rest.find("{", close), rest.find(";", close)
                if brace >= 0 and (semi < 0 or brace < semi):
                    defs.setdefault(m.group(1), i + 1)
        depth += line.count("{") - line.count("}")
    return defs


def check_circles(root, files, problems, explain):
    by_folder = {}
    for f in files:
        if f.endswith(".c"):
            by_folder.setdefault(folder_of(f), []).append(f)
    for folder, cfiles in sorted(by_folder.items()):
        text = {f: strip_c(open(os.path.join(root, f), encoding="utf-8").read()) for f in cfiles}
        owner = {}
        for f in cfiles:
            for name in defined_functions(text[f]):
                owner.setdefault(name, f)
        uses = {f: {} for f in cfiles}
        for f in cfiles:
            for m in IDENT.finditer(text[f]):
                g = owner.get(m.group(0))
                if g and g != f:
                    uses[f].setdefault(g, set()).add(m.group(0))
        for scc in strongly_connected(cfiles, uses):
            if len(scc) < 2:
                continue
            ring = sorted(scc)
            detail = []
            for a in ring:
                for b in ring:
                    if b in uses[a]:
                        names = sorted(uses[a][b])
                        detail.append(f"  {a} -> {b}: {', '.join(names[:4])}"
                                      + (f" and {len(names) - 4} more" if len(names) > 4 else ""))
            problems.append(f"{folder}/: files call each other in a circle: {', '.join(ring)}\n"
                            + "\n".join(detail))
        if explain:
            for a in sorted(uses):
                for b in sorted(uses[a]):
                    print(f"{a} -> {b}")


def strongly_connected(nodes, uses):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in uses[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    explain = "--explain" in sys.argv[2:]
    files = sorted(sources(root))
    problems = []
    check_layers(root, files, problems)
    check_names(files, problems)
    check_circles(root, files, problems, explain)
    for p in problems:
        print(p)
    print(f"include rules: {len(files)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
