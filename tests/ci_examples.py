#!/usr/bin/env python3
"""ctest fleet.ci_examples: the example CI configurations of examples/ci/ parse (Debian's
python3-yaml) and use only syncroll commands and options that exist.

Every `syncroll SUBCOMMAND ...` invocation in any string of a file is found (after joining
backslash-continued lines and splitting at shell separators); its subcommand must be one
`syncroll --help` lists and every option one `syncroll SUBCOMMAND --help` names. Each `run`
invocation is then executed as a dry run (`--list`, no engine starts) with the environment the
CI system would give one shard, and must select its shard from the source the example relies
on. Each file must also merge its shards (`report --merge`), and its shard count must agree
with its parallelism.

The three examples must be equivalent: every one balances its shards by the recorded
durations (`run --timings fixtures/nightly-timings.json`), gates on the merge (its exit status
becomes the job's, but only after the history and the upload: a script that keeps the status
and exits with it last, or GitHub's failing step followed by `if: always()` steps), keeps a
history (`report --history ... --last 30`) and uploads or keeps merged/ and the history report.
Usage: ci_examples.py SYNCROLL SOURCE_DIR
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

SYNCROLL, SRC = sys.argv[1], sys.argv[2]
EX = os.path.join(SRC, "examples", "ci")
failures = []


def bad(msg):
    print("FAIL: " + msg)
    failures.append(msg)


def ok(msg):
    print("ok: " + msg)


def help_text(*args):
    p = subprocess.run([SYNCROLL, *args, "--help"], capture_output=True, text=True)
    if p.returncode != 0:
        bad("syncroll %s --help exited %d" % (" ".join(args), p.returncode))
    return p.stdout


SUBCOMMANDS = set(re.findall(r"^\s{2,}([a-z][a-z-]+)\s", help_text(), re.M))


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def invocations(text, subst):
    """Token lists of every syncroll command in a shell text, after `subst`."""
    text = subst(text.replace("\\\n", " "))
    out = []
    for line in text.splitlines():
        for part in re.split(r"&&|\|\||;|\|", line):
            try:
                tok = shlex.split(part, comments=True)
            except ValueError as e:
                bad("cannot split %r: %s" % (part, e))
                continue
            for i, t in enumerate(tok):
                if os.path.basename(t) == "syncroll" and i + 1 < len(tok):
                    out.append(tok[i + 1:])
                    break
    return out


def check_options(name, cmd):
    sub = cmd[0]
    if sub not in SUBCOMMANDS:
        bad("%s: syncroll %s is not a subcommand" % (name, sub))
        return False
    text = help_text(sub)
    good = True
    for t in cmd[1:]:
        if t.startswith("-") and not re.fullmatch(r"-j\d*", t):
            opt = t.split("=", 1)[0]
            if not re.search(r"(^|[\s\[(,])" + re.escape(opt) + r"([\s\]=,)]|$)", text):
                bad("%s: syncroll %s has no option %s" % (name, sub, opt))
                good = False
    if good:
        ok("%s: syncroll %s uses only existing options" % (name, " ".join(cmd[:2])))
    return good


def dry_run(name, cmd, env, want_source):
    """Runs `syncroll run ... --list` with --out in a temporary folder."""
    args = list(cmd)
    for i, t in enumerate(args):
        if t == "--out" and i + 1 < len(args):
            args[i + 1] = tempfile.mkdtemp()
    clean = {k: v for k, v in os.environ.items()
             if not re.match(r"(BUILDKITE_|CI_NODE_|CIRCLE_NODE_|JOB_COMPLETION_|SYNCROLL_)", k)}
    clean.update(env)
    p = subprocess.run([SYNCROLL, *args, "--list"], capture_output=True, text=True, cwd=SRC,
                       env=clean)
    if p.returncode != 0:
        bad("%s: dry run of syncroll %s exited %d: %s" % (name, " ".join(args), p.returncode,
                                                         p.stderr.strip()))
    elif not re.search(r"shard 1/4 from %s " % want_source, p.stderr):
        bad("%s: dry run did not take its shard from %s: %r" % (name, want_source, p.stderr))
    elif not p.stdout.strip():
        bad("%s: dry run selected no scenario" % name)
    else:
        ok("%s: dry run selects %d scenarios as shard 1/4 from %s" %
           (name, len(p.stdout.split()), want_source))


def load(name):
    with open(os.path.join(EX, name)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    ok("%s parses (%d document%s)" % (name, len(docs), "" if len(docs) == 1 else "s"))
    return docs


def check_file(name, docs, subst, env, source, shards):
    cmds = [c for d in docs for s in strings(d) for c in invocations(s, subst)]
    if not cmds:
        bad("%s: no syncroll invocation" % name)
    for c in cmds:
        if check_options(name, c) and c[0] == "run":
            dry_run(name, c, env, source)
    if not any(c[:2] == ["report", "--merge"] for c in cmds):
        bad("%s: no `syncroll report --merge`" % name)
    runs = [c for c in cmds if c[0] == "run"]
    if not runs or not all("--timings" in c and
                           c[c.index("--timings") + 1] == "fixtures/nightly-timings.json"
                           for c in runs):
        bad("%s: a shard is not balanced by --timings fixtures/nightly-timings.json" % name)
    if not any(c[:2] == ["report", "--history"] and "--last" in c for c in cmds):
        bad("%s: no `syncroll report --history ... --last N`" % name)
    if shards != 4:
        bad("%s: %s shards where the run expects 4" % (name, shards))


def script_gate(name, script):
    """A script that merges: the merge's status kept, history after it, that status last."""
    lines = [l.strip() for l in script.replace("\\\n", " ").splitlines() if l.strip()]
    text = " ".join(lines)
    m = re.search(r"report --merge [^;\n]*\|\| status=\$\$?\?", text)
    h = text.find("report --history")
    last = re.search(r"exit \"?\$\$?\{?status\}?\"?;?$", text)
    if not m or h < m.end() or not last:
        bad("%s: the merge is not the gate (status kept, history after it, exit with it last)"
            % name)
    else:
        ok("%s: the merge's status is the job's, after the history" % name)


def github():
    name = "github-nightly.yml"
    docs = load(name)
    wf = docs[0]
    genv = {k: str(v) for k, v in wf.get("env", {}).items()}

    def subst(s):
        s = s.replace("${{ matrix.shard }}", "1")
        return re.sub(r"\$\{\{[^}]*\}\}", "x", s)

    env = {k: subst(v) for k, v in genv.items()}
    matrix = wf["jobs"]["shard"]["strategy"]["matrix"]["shard"]
    if str(len(matrix)) != genv.get("SHARDS"):
        bad("%s: matrix of %d shards but SHARDS=%s" % (name, len(matrix), genv.get("SHARDS")))
    if wf["jobs"]["merge"].get("needs") != "shard":
        bad("%s: the merge job does not wait for the shards" % name)

    def expand(s):
        return subst(s).replace("${SHARDS}", env["SHARDS"]).replace("${RUN_GROUP}",
                                                                     env["RUN_GROUP"])

    check_file(name, docs, expand, env, "option", len(matrix))
    steps = wf["jobs"]["merge"]["steps"]
    merge = [i for i, s in enumerate(steps) if "--merge" in str(s.get("run", ""))]
    later = steps[merge[0] + 1:] if merge else []
    if (not merge or steps[merge[0]].get("continue-on-error") or
            any(s.get("if") != "always()" for s in later)):
        bad("%s: the merge step is not the gate followed by `if: always()` steps" % name)
    else:
        ok("%s: the merge step is the gate; history and upload run always" % name)
    paths = " ".join(str(s.get("with", {}).get("path", "")) for s in later
                     if "upload-artifact" in str(s.get("uses", "")))
    if "merged/" not in paths or "history-report/" not in paths:
        bad("%s: merged/ and history-report/ are not uploaded" % name)


def buildkite():
    name = "buildkite-pipeline.yml"
    docs = load(name)
    p = docs[0]
    steps = [s for s in p["steps"] if isinstance(s, dict) and "parallelism" in s]
    if len(steps) != 1:
        bad("%s: want one step with parallelism" % name)
        return
    env = {"BUILDKITE_PARALLEL_JOB": "0",
           "BUILDKITE_PARALLEL_JOB_COUNT": str(steps[0]["parallelism"]),
           "BUILDKITE_BUILD_ID": "0190aaaa-bbbb"}
    for k, v in p.get("env", {}).items():
        env[k] = os.path.expandvars(str(v).replace("${BUILDKITE_BUILD_ID}",
                                                   env["BUILDKITE_BUILD_ID"]))

    def subst(s):  # Buildkite's $$ is a literal $ for the shell
        return s.replace("$$", "$").replace("${BUILDKITE_PARALLEL_JOB}", "0")

    check_file(name, docs, subst, env, "buildkite", steps[0]["parallelism"])
    merge = [s for s in p["steps"] if isinstance(s, dict) and "--merge" in str(s.get("command"))]
    if len(merge) != 1:
        bad("%s: want one merge step" % name)
        return
    script_gate(name, merge[0]["command"])
    paths = " ".join(merge[0].get("artifact_paths", []))
    if "merged/**" not in paths or "history-report/" not in paths:
        bad("%s: the merge step does not upload merged/ (all of it) and history-report/" % name)


def kubernetes():
    name = "k8s-indexed-job.yaml"
    docs = load(name)
    jobs = [d for d in docs if d.get("kind") == "Job"]
    shard = [j for j in jobs if j["spec"].get("completionMode") == "Indexed"]
    if len(shard) != 1:
        bad("%s: want one Indexed Job" % name)
        return
    spec = shard[0]["spec"]
    c = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: str(e["value"]) for e in c.get("env", []) if "value" in e}
    if env.get("SYNCROLL_SHARD_COUNT") != str(spec["completions"]):
        bad("%s: SYNCROLL_SHARD_COUNT %s != completions %s" %
            (name, env.get("SYNCROLL_SHARD_COUNT"), spec["completions"]))
    env["JOB_COMPLETION_INDEX"] = "0"

    def subst(s):
        for k, v in env.items():
            s = s.replace("${%s}" % k, v)
        return s

    check_file(name, docs, subst, env, "kubernetes", spec["completions"])
    merge = [j for j in jobs if "--merge" in str(j)]
    if len(merge) != 1:
        bad("%s: want one merge Job" % name)
        return
    c = merge[0]["spec"]["template"]["spec"]["containers"][0]
    script = " ".join(c.get("args", []))
    script_gate(name, script.replace("; ", ";\n"))
    mounts = [v["mountPath"] for v in c.get("volumeMounts", [])]
    if "/reports" not in mounts or "--out /reports/history" not in script:
        bad("%s: the merged run and the history are not kept on the volume" % name)


github()
buildkite()
kubernetes()
sys.exit(1 if failures else 0)
