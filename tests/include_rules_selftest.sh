#!/bin/sh
# The include-rule checker must fail where the architecture is broken (ctest
# arch.include_rules_selftest): on a copy of lib/ and harness/, each broken rule is reported with
# the file and line, what is allowed passes, and the clean copy passes.
SR_NO_EXECUTABLE=1
. "$(dirname "$0")/lib.sh"
PY=${PYTHON:-python3}
fresh() {
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t"
    cp -R "$SRC/lib" "$SRC/harness" "$tmp/t/"
}
check() { "$PY" "$SRC/tests/include_rules.py" "$tmp/t" >"$tmp/out" 2>&1; }
expect_problem() { # expect_problem <what> <pattern>
    if check; then
        bad "$1: the checker passed"; cat "$tmp/out"
    elif ! grep -q "$2" "$tmp/out"; then
        bad "$1: no line matching '$2'"; cat "$tmp/out"
    else
        ok "$1: $(grep -m1 "$2" "$tmp/out")"
    fi
}
expect_clean() { # expect_clean <what>
    if check; then ok "$1"; else bad "$1: the checker failed"; cat "$tmp/out"; fi
}
append() { printf '%s\n' "$2" >>"$tmp/t/$1"; }

fresh
expect_clean "the tree as it is passes"

fresh
n=$(wc -l <"$tmp/t/harness/run/runner.c")
append harness/run/runner.c '#include "engine/engine.h"'
expect_problem "run/ includes engine/" "^harness/run/runner.c:$((n + 1)): .*run/ may not include harness/engine/"

fresh
append harness/sync/sync.c '#include <engine/engine.h>'
expect_problem "an engine header in angle brackets" "^harness/sync/sync.c:[0-9]*: .*sync/ may not include harness/engine/"

fresh
append harness/cli/cmd_lint.c '#include "engine/engine.h"'
expect_problem "a trainer-side command includes engine/" "^harness/cli/cmd_lint.c:[0-9]*: .*cli/ may not include harness/engine/"

fresh
append harness/cli/cmd_serve.c '#include "engine/engine.h"'
expect_clean "serve, a command that runs engines, may include engine/"

fresh
append harness/run/runner.c '/* #include "engine/engine.h" was here */'
expect_clean "a commented-out include is no arrow"

fresh
append harness/main.c '#include "run/runner.h"'
expect_problem "main.c reaches past its few headers" "^harness/main.c:[0-9]*: .*harness/ may not include harness/run/"

fresh
append harness/spec/checks.c '#define HDR "scenario/scenario.h"'
append harness/spec/checks.c '#include HDR'
expect_problem "an include of a macro" "^harness/spec/checks.c:[0-9]*: an #include of a macro"

fresh
append lib/sr_buf.c '#include "report/result.h"'
expect_problem "lib/ includes harness/" "^lib/sr_buf.c:[0-9]*: .*lib/ may not include harness/report/"

fresh
cat >"$tmp/t/harness/report/ping.c" <<'C'
int sr_selftest_pong(int n);
__attribute__((noinline)) int sr_selftest_ping(int n)
{
    return n ? sr_selftest_pong(n - 1) : 0;
}
C
cat >"$tmp/t/harness/report/pong.c" <<'C'
int sr_selftest_ping(int n);
int sr_selftest_pong(int n)
{
    return n ? sr_selftest_ping(n - 1) : 1;
}
C
expect_problem "a circle inside report/" "files call each other in a circle: harness/report/ping.c, harness/report/pong.c"

fresh
append harness/run/runner.c '#include "scenario/scenario_priv.h"'
expect_problem "a private header included from another folder" "^harness/run/runner.c:[0-9]*: .*harness/scenario/scenario_priv.h is private to harness/scenario/"

fresh
append lib/sr_buf.c '#include "sr_splice_priv.h"'
expect_clean "a private header of lib/ included inside lib/"

fresh
cp "$tmp/t/harness/spec/faults.h" "$tmp/t/harness/engine/faults.h"
expect_problem "two files of one name under harness/" "harness/engine/faults.h, harness/spec/faults.h: the name faults.h is used twice"

fresh
append harness/scenario/keys.c '#include "scenario_priv_gone.h"'
expect_problem "a stale include" "^harness/scenario/keys.c:[0-9]*: .*names no file"

finish
