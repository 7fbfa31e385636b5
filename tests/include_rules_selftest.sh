#!/bin/sh
# The include-rule checker must fail where the architecture is broken (ctest
# arch.include_rules_selftest): on a copy of lib/ and harness/, a trainer-side file that includes
# an engine header, a circle of calls between two files of one folder, and a stale include path
# are each reported with the file and line, and the clean copy passes.
set -u
SRC=${SYNCROLL_SOURCE_DIR:?SYNCROLL_SOURCE_DIR must point at the source tree}
PY=${PYTHON:-python3}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
fresh() {
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t"
    cp -R "$SRC/lib" "$SRC/harness" "$tmp/t/"
}
expect_problem() { # expect_problem <what> <pattern>
    if "$PY" "$SRC/tests/include_rules.py" "$tmp/t" >"$tmp/out" 2>&1; then
        echo "FAIL: $1: the checker passed"; cat "$tmp/out"; fail=1
    elif ! grep -q "$2" "$tmp/out"; then
        echo "FAIL: $1: no line matching '$2'"; cat "$tmp/out"; fail=1
    else
        echo "ok: $1: $(grep -m1 "$2" "$tmp/out")"
    fi
}

fresh
if "$PY" "$SRC/tests/include_rules.py" "$tmp/t" >"$tmp/out" 2>&1; then
    echo "ok: the tree as it is passes"
else
    echo "FAIL: the unmodified copy fails"; cat "$tmp/out"; fail=1
fi

# A trainer-side file includes an engine header.
fresh
n=$(wc -l <"$tmp/t/harness/run/runner.c")
echo '#include "engine/engine.h"' >>"$tmp/t/harness/run/runner.c"
expect_problem "run/ includes engine/" "^harness/run/runner.c:$((n + 1)): .*run/ may not include harness/engine/"

# lib/ includes the harness.
fresh
echo '#include "report/result.h"' >>"$tmp/t/lib/sr_buf.c"
expect_problem "lib/ includes harness/" "^lib/sr_buf.c:[0-9]*: .*lib/ may not include harness/report/"

# Two files of one folder call each other.
fresh
cat >"$tmp/t/harness/report/ping.c" <<'C'
int sr_selftest_pong(int n);
int sr_selftest_ping(int n)
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

# An include that names no file.
fresh
echo '#include "scenario_priv_gone.h"' >>"$tmp/t/harness/scenario/keys.c"
expect_problem "a stale include" "^harness/scenario/keys.c:[0-9]*: .*names no file"

exit $fail
