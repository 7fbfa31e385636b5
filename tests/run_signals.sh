# `syncroll run` stopped by real signals (issue 21 item 1): SIGTERM and SIGINT leave all four
# reports, marked partial, and no engine; a second signal exits at once; an engine behind a
# wrapper script is stopped with its whole process group; a harness killed with SIGKILL leaves
# no engine either (parent-death signal). Engines are found by the pids the harness writes into
# the run folder (artifacts/<id>/engine-<i>.pid, each the leader of its own process group) and
# checked by process group, never by name.
. "$(dirname "$0")/lib.sh"

# A scenario whose rollout never ends by itself: every generate stalls, and the client's
# deadline (60 s) is far beyond this test.
cat >"$tmp/stall.json" <<'EOF'
{
  "id": "sig-stall",
  "description": "every generate stalls: only a stop signal ends this scenario early",
  "tags": ["signals"],
  "engines": {"count": 2, "faults": [{"kind": "stall", "id": "hang", "endpoints": ["generate"]}]},
  "steps": [
    {"kind": "rollout", "name": "stalled", "batch": 4, "turns": 1},
    {"kind": "rollout", "name": "never", "batch": 2, "turns": 1}
  ]
}
EOF
cat >"$tmp/after.json" <<'EOF'
{
  "id": "sig-after",
  "description": "selected after the stalled scenario: must be reported as not started",
  "tags": ["signals"],
  "steps": [{"kind": "rollout", "batch": 2, "turns": 1}]
}
EOF
mkdir "$tmp/scn"
cp "$tmp/stall.json" "$tmp/scn/a-stall.json"
cp "$tmp/after.json" "$tmp/scn/b-after.json"

# An engine wrapper that does not exec: the engine is the wrapper's child, in its group.
cat >"$tmp/wrap.sh" <<EOF
#!/bin/sh
"$S" "\$@"
exit \$?
EOF
chmod +x "$tmp/wrap.sh"

RUN_PID=
at_exit '[ -n "$RUN_PID" ] && kill -KILL "$RUN_PID" 2>/dev/null'

# group_alive PGID: 0 if a process that is not a zombie has process group PGID.
group_alive() {
    # One cat for all: a process that ends meanwhile is only an error message, cat goes on.
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v g="$1" '{ sub(/^.*\) /, ""); if ($3 == g && $1 != "Z") found = 1 }
                          END { exit !found }'
}

# poll SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds (0) or SECONDS pass (1).
poll() {
    sr_n=$(($1 * 10))
    shift
    while [ "$sr_n" -gt 0 ]; do
        "$@" && return 0
        sleep 0.1
        sr_n=$((sr_n - 1))
    done
    return 1
}

pid_files() { ls "$OUTD"/*/artifacts/sig-stall/engine-*.pid 2>/dev/null; }
# The harness's children (pid = process group of each, see procs.h), for a harness that writes
# no pid files (the test then still sees what it left behind).
children() {
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$RUN_PID" '{ pid = $1; sub(/^.*\) /, "");
        if ($2 == p && $1 != "Z") print pid }'
}
# The engines' pids, into $OUTD.pids.
two_engines() {
    if [ "$(pid_files | wc -l)" -ge 2 ]; then
        cat $(pid_files) >"$OUTD.pids"
    else
        children >"$OUTD.pids"
    fi
    [ "$(wc -l <"$OUTD.pids")" -ge 2 ]
}
# The harness has exited (a zombie until this shell waits for it counts as exited).
run_gone() {
    st=$(sed 's/^.*) //' "/proc/$RUN_PID/stat" 2>/dev/null) || return 0
    [ "${st%% *}" = Z ]
}
any_engine_alive() {
    for p in $(cat "$OUTD.pids"); do
        group_alive "$p" && return 0
        st=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null) && [ "${st%% *}" != Z ] && return 0
    done
    return 1
}
no_engine_alive() { ! any_engine_alive; }
log_says() { grep -q "$1" "$OUTD.log" 2>/dev/null; }

# start NAME [ENV...]: starts the run on the stalled scenario (and one after it) in $OUTD, waits
# until its engines exist and have had time to take the stalled requests.
start() {
    OUTD=$tmp/$1
    shift
    env "$@" "$S" run --out "$OUTD" "$tmp/scn" >"$OUTD.log" 2>&1 &
    RUN_PID=$!
    poll 20 two_engines || die "$OUTD: the engines did not start"
    sleep 1
}

# finish_run WANT WHAT: the harness exits with status WANT, within 30 s, then no engine of the
# run is alive within 10 s. Both are bounds on a hang, not timing measurements: the watcher
# kills what is left a second after the signal, and without it the stalled rollout would run to
# the client's 60 s deadline and the engines would never end; a loaded machine or a sanitizer
# build only makes the wait longer, never the verdict different.
finish_run() {
    if poll 30 run_gone; then
        ok "$2: harness exited within 30 s of the signal"
    else
        bad "$2: harness still running 30 s after the signal"
        kill -KILL "$RUN_PID"
    fi
    wait "$RUN_PID"
    got=$?
    RUN_PID=
    [ "$got" -eq "$1" ] && ok "$2: exit status $got" || bad "$2: exit status $got, expected $1"
    if poll 10 no_engine_alive; then
        ok "$2: no engine process group alive within 10 s of the harness's exit"
    else
        bad "$2: an engine process group outlived the harness"
        for p in $(cat "$OUTD.pids"); do kill -KILL -- "-$p" "$p" 2>/dev/null; done
    fi
}

# partial_reports WHAT SIGNAL: the four reports exist and are marked partial.
partial_reports() {
    d=$(ls -d "$OUTD"/2*/ 2>/dev/null | head -n 1)
    for f in summary.txt results.json junit.xml report.html; do
        [ -s "$d/$f" ] || bad "$1: $f missing"
    done
    grep -q "PARTIAL RUN: interrupted by $2" "$d/summary.txt" 2>/dev/null &&
        grep -q "interrupted\$" "$d/summary.txt" && ok "$1: summary.txt marked partial" ||
        bad "$1: summary.txt not marked partial"
    grep -q '"partial":[[:space:]]*true' "$d/results.json" 2>/dev/null &&
        grep -q "\"partial_reason\":[[:space:]]*\"interrupted by $2\"" "$d/results.json" &&
        ok "$1: results.json partial with its reason" || bad "$1: results.json not partial"
    n=$(grep -c '"verdict":[[:space:]]*"interrupted"' "$d/results.json" 2>/dev/null)
    [ "${n:-0}" -eq 2 ] &&
        ok "$1: both scenarios interrupted (the second not started)" ||
        bad "$1: results.json lacks two interrupted verdicts"
    n=$(grep -c 'type="run.interrupted"' "$d/junit.xml" 2>/dev/null)
    [ "${n:-0}" -eq 2 ] &&
        grep -q 'name="partial"' "$d/junit.xml" && ok "$1: junit.xml errors run.interrupted" ||
        bad "$1: junit.xml does not show the interrupted scenarios"
    grep -q 'class="partial"' "$d/report.html" 2>/dev/null && ok "$1: report.html has the partial banner" ||
        bad "$1: report.html has no partial banner"
}

# 1. SIGTERM: reports, 143, engines gone.
start term
kill -TERM "$RUN_PID"
finish_run 143 "SIGTERM"
partial_reports "SIGTERM" SIGTERM

# 2. SIGINT: likewise with 130.
start int
kill -INT "$RUN_PID"
finish_run 130 "SIGINT"
partial_reports "SIGINT" SIGINT

# 2b. SIGHUP (the terminal or the CI session went away): likewise with 129 (before: killed by
# the signal's default action, no reports).
start hup
kill -HUP "$RUN_PID"
finish_run 129 "SIGHUP"
partial_reports "SIGHUP" SIGHUP

# 3. A second signal exits at once and still kills the engines.
start twice
kill -TERM "$RUN_PID"
poll 5 log_says "a second signal exits" || bad "twice: no stopping message"
kill -TERM "$RUN_PID"
finish_run 143 "second SIGTERM"
log_says "again: engines killed" && ok "second SIGTERM: said so" || bad "second SIGTERM: silent"

# 4. An engine behind a wrapper script: the wrapper's whole group is stopped.
start wrapped SYNCROLL_ENGINE="$tmp/wrap.sh"
kill -TERM "$RUN_PID"
finish_run 143 "SIGTERM, engines behind a wrapper"

# 5. SIGKILL: nothing of the harness runs, the engines die with it (parent-death signal).
start killed
kill -KILL "$RUN_PID"
finish_run 137 "SIGKILL"

# 6. SIGKILL with engines behind a wrapper: each engine follows the harness, not the wrapper.
start killed-wrapped SYNCROLL_ENGINE="$tmp/wrap.sh"
kill -KILL "$RUN_PID"
finish_run 137 "SIGKILL, engines behind a wrapper"

# 7. SIGKILL of `syncroll serve`: its engines (the pids it printed) die with it.
OUTD=$tmp/serve
"$S" serve "$tmp/stall.json" >"$OUTD.log" 2>&1 &
RUN_PID=$!
serve_ready() { grep -q '"engines"' "$OUTD.log"; }
poll 20 serve_ready || die "serve: no engine list"
grep -o '"pid":[0-9]*' "$OUTD.log" | cut -d: -f2 >"$OUTD.pids"
[ "$(wc -l <"$OUTD.pids")" -eq 2 ] || bad "serve: printed $(wc -l <"$OUTD.pids") pids, expected 2"
kill -KILL "$RUN_PID"
finish_run 137 "SIGKILL of serve"

# 8. SIGTERM while the reports are written: exit 143, not 0; the reports are complete (every
# scenario finished). A wrapper puts a FIFO where summary.txt's temporary file will be, before
# the engine starts; writing the reports then blocks in opening it until this test reads it, and
# the test sends the signal once the harness's main thread waits there (its wchan is the FIFO's
# wait_for_partner), so the signal arrives at a known point of the report writing.
cat >"$tmp/fifo-wrap.sh" <<EOF
#!/bin/sh
prev=
for a in "\$@"; do [ "\$prev" = --config ] && cfg=\$a; prev=\$a; done
mkfifo "\${cfg%/artifacts/*}/.summary.txt.tmp-\$SYNCROLL_PARENT_PID"
exec "$S" "\$@"
EOF
chmod +x "$tmp/fifo-wrap.sh"
OUTD=$tmp/late
SYNCROLL_ENGINE="$tmp/fifo-wrap.sh" "$S" run --out "$OUTD" "$tmp/after.json" >"$OUTD.log" 2>&1 &
RUN_PID=$!
in_fifo_open() { [ "$(cat "/proc/$RUN_PID/task/$RUN_PID/wchan" 2>/dev/null)" = wait_for_partner ]; }
if poll 30 in_fifo_open; then
    kill -TERM "$RUN_PID"
    cat "$OUTD"/2*/.summary.txt.tmp-* >"$OUTD.summary"
    finish_run 143 "SIGTERM while the reports are written"
    grep -q "SIGTERM while the reports were written: they are complete; exit 143" "$OUTD.log" &&
        ok "late SIGTERM: said so" || bad "late SIGTERM: no message: $(cat "$OUTD.log")"
    grep -q '^1 passed, 0 failed' "$OUTD.summary" && ok "late SIGTERM: summary complete" ||
        bad "late SIGTERM: summary: $(cat "$OUTD.summary")"
    d=$(ls -d "$OUTD"/2*/ | head -n 1)
    grep -q '"partial":[[:space:]]*false' "$d/results.json" && ok "late SIGTERM: not partial" ||
        bad "late SIGTERM: results.json partial or missing"
elif [ "$(cat "/proc/$RUN_PID/task/$RUN_PID/wchan" 2>/dev/null)" = 0 ]; then
    echo "skip: SIGTERM while the reports are written: this kernel hides /proc/PID/wchan"
    cat "$OUTD"/2*/.summary.txt.tmp-* >/dev/null 2>&1
    wait "$RUN_PID"
    RUN_PID=
else
    bad "the harness never waited on the FIFO: $(cat "$OUTD.log")"
fi

finish
