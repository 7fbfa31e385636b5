#!/bin/sh
# make memcheck: a few unit suites and two smoke scenarios under valgrind's memcheck
# (--leak-check=full --error-exitcode=1, suppressions in tests/valgrind.supp). In the scenarios
# both the harness (`syncroll run`) and every engine it spawns (through SYNCROLL_ENGINE) run
# under memcheck; an engine with a memcheck error exits 1, which the runner reports as
# engine.crashed, so the scenario fails. Exit status 0 only if everything was clean.
build=$(cd "${1:-build}" && pwd) || exit 2
SYNCROLL=$build/harness/syncroll
. "$(dirname "$0")/lib.sh"
out=$tmp
vg="valgrind -q --leak-check=full --error-exitcode=1 --suppressions=$SRC/tests/valgrind.supp"

# Prints the memcheck reports (lines "==pid== ...") of the logs given.
reports() {
    for f in "$@"; do
        [ -f "$f" ] && grep -q '^==[0-9]*==' "$f" && { echo "--- $f"; cat "$f"; }
    done
    return 0
}

for t in envelope splice scenario limits; do
    printf '== unit.%s under memcheck: ' "$t"
    if CK_FORK=no $vg --log-file="$out/unit-$t.%p.log" "$build/tests/test_$t" \
        >"$out/unit-$t.out" 2>&1; then
        tail -1 "$out/unit-$t.out"
    else
        echo FAIL
        cat "$out/unit-$t.out"
        reports "$out"/unit-"$t".*.log
        fail=1
    fi
done

cat >"$out/engine.sh" <<EOF
#!/bin/sh
exec $vg --log-file=$out/engine.%p.log "$S" "\$@"
EOF
chmod +x "$out/engine.sh"
for s in r3-two-turns sync-between-batches; do
    printf '== scenario %s under memcheck (harness and engines): ' "$s"
    if SYNCROLL_ENGINE="$out/engine.sh" $vg --log-file="$out/run-$s.%p.log" \
        "$S" run --out "$out/runs" "$SRC/scenarios/examples/$s.json" \
        >"$out/run-$s.out" 2>&1; then
        tail -1 "$out/run-$s.out"
    else
        echo FAIL
        cat "$out/run-$s.out"
        fail=1
    fi
    reports "$out"/run-"$s".*.log
done
# Engines report through their exit status, but say which and why.
if ls "$out"/engine.*.log >/dev/null 2>&1 && grep -l '^==[0-9]*==' "$out"/engine.*.log >/dev/null; then
    reports "$out"/engine.*.log
    fail=1
fi
if [ "$fail" -eq 0 ]; then
    echo "memcheck: clean"
else
    keep_tmp
    echo "memcheck: FAILED (logs in $out)"
fi
finish
