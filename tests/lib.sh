# tests/lib.sh: the prologue and helpers every shell test shares (POSIX sh). A test starts with
#     . "$(dirname "$0")/lib.sh"
# (ctest runs each as `sh tests/NAME.sh`, so $0 names the script). After it:
#   S     the syncroll executable: $SYNCROLL, which must be set unless the script sets
#         SR_NO_EXECUTABLE=1 before sourcing (a test of the sources alone)
#   SRC   the source tree: $SYNCROLL_SOURCE_DIR, else the folder above tests/
#   tmp   a private temporary directory, removed when the script exits (unless keep_tmp)
#   fail  0 until `bad` records a failure; `finish` exits with it
#   OUT   standard output and error of the last `expect` or `expect_out`
# The checks print one "ok: ..." or "FAIL: ..." line each; a script fails (non-zero exit) as soon
# as one `die`s, or at `finish` once one was `bad`.
# shellcheck disable=SC2034 # S, SRC and OUT are for the sourcing script
set -u

if [ "${SR_NO_EXECUTABLE:-0}" = 1 ]; then
    S=
else
    S=${SYNCROLL:?SYNCROLL must point at the syncroll executable}
fi
SRC=${SYNCROLL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncroll-test-XXXXXX") || exit 2
fail=0
OUT=
DIE_LOG=            # a file `die` prints after its message, when it exists
sr_at_exit=         # the script's own clean-up (at_exit), run before tmp is removed
sr_keep_tmp=0
sr_servers=         # the pids `start` started, killed at exit

sr_cleanup() {
    [ -n "$sr_at_exit" ] && eval "$sr_at_exit"
    for sr_p in $sr_servers; do kill "$sr_p" 2>/dev/null; done
    if [ "$sr_keep_tmp" = 1 ]; then
        echo "(files kept in $tmp)"
    else
        rm -rf "$tmp"
    fi
}
trap sr_cleanup EXIT
# A script stopped by a signal (a ctest timeout, ^C) cleans up too.
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# at_exit COMMAND: run COMMAND (e.g. stop a background server) when the script exits.
at_exit() { sr_at_exit=$1; }

# keep_tmp: leave $tmp in place at exit (and say where), e.g. to keep the logs of a failure.
keep_tmp() { sr_keep_tmp=1; }

# start NAME COMMAND...: runs a server (serve, proxy, replay --serve) in the background and
# reads the one line it prints once it listens, from a FIFO (the readiness handshake: no sleep);
# sets line, url (the line's first "url") and last_pid. Its standard error goes to
# $tmp/NAME.err; it is killed at exit if still running.
start() {
    sr_name=$1
    shift
    rm -f "$tmp/fifo"
    mkfifo "$tmp/fifo"
    "$@" >"$tmp/fifo" 2>"$tmp/$sr_name.err" &
    last_pid=$!
    sr_servers="$sr_servers $last_pid"
    exec 3<"$tmp/fifo"
    IFS= read -r line <&3 || die "$sr_name printed no line: $(cat "$tmp/$sr_name.err")"
    exec 3<&-
    url=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | head -n 1 | sed 's/"url":"//; s/"$//')
    [ -n "$url" ] || die "$sr_name: no url in '$line'"
}

# stop PID: ends a server started by start (SIGTERM) and waits for it (a proxy closes its
# capture).
stop() {
    kill -TERM "$1"
    wait "$1"
}

ok() { echo "ok: $*"; }

# bad MESSAGE: record a failure and go on.
bad() {
    echo "FAIL: $*"
    fail=1
}

# die MESSAGE: report a failure (and $DIE_LOG) and exit 1 now.
die() {
    echo "FAIL: $*"
    [ -n "$DIE_LOG" ] && [ -f "$DIE_LOG" ] && cat "$DIE_LOG"
    exit 1
}

# expect STATUS WHAT COMMAND...: COMMAND must exit with STATUS; its output is kept in $OUT and
# shown on failure. Returns 0 when it did, 1 (after `bad`) when not.
expect() {
    sr_want=$1
    sr_what=$2
    shift 2
    OUT=$("$@" 2>&1)
    sr_got=$?
    if [ "$sr_got" -ne "$sr_want" ]; then
        bad "$sr_what: exit $sr_got, expected $sr_want"
        printf '%s\n' "$OUT"
        return 1
    fi
    ok "$sr_what"
}

# expect_out STATUS PATTERN WHAT COMMAND...: as expect, and the output must match the extended
# regular expression PATTERN.
expect_out() {
    sr_want=$1
    sr_pat=$2
    sr_what=$3
    shift 3
    OUT=$("$@" 2>&1)
    sr_got=$?
    if [ "$sr_got" -ne "$sr_want" ] || ! printf '%s\n' "$OUT" | grep -Eq -- "$sr_pat"; then
        bad "$sr_what: exit $sr_got (expected $sr_want), output lacks /$sr_pat/"
        printf '%s\n' "$OUT"
        return 1
    fi
    ok "$sr_what"
}

# finish: exit with the verdict of the `bad` checks.
finish() { exit "$fail"; }
