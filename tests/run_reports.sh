# `syncroll run` and its report files (issue 21 items 2 and 12): a report that cannot be written
# is named on stderr and makes the exit status 3; `latest` is replaced only when it is a
# symbolic link, and no temporary link is left behind. Works as root (CI) and not: writes fail
# through RLIMIT_FSIZE, which root is bound by too.
. "$(dirname "$0")/lib.sh"

cat >"$tmp/tiny.json" <<'EOF'
{
  "id": "reports-tiny",
  "description": "one small rollout that passes",
  "tags": ["reports"],
  "steps": [{"kind": "rollout", "batch": 2, "turns": 1}]
}
EOF

# 1. Files above 3 KiB cannot be written (ulimit -f counts 512-byte blocks in dash, 1 KiB in
# bash; the expanded scenario and the engine config fit either way, results.json and
# report.html do not). SIGXFSZ is ignored, as a CI runner may have it, so the writes fail with
# EFBIG instead of killing the run.
expect_out 3 'report\.html not written: .*/report\.html: cannot write: File too large' \
    "a report that cannot be written: exit 3, file and reason named" \
    sh -c 'trap "" XFSZ; ulimit -f 6; exec "$0" run --out "$1" "$2"' "$S" "$tmp/fsize" \
    "$tmp/tiny.json"
printf '%s\n' "$OUT" | grep -q 'results\.json not written: .*/results\.json: cannot write' &&
    ok "results.json named too" || bad "results.json's failure not named: $OUT"
printf '%s\n' "$OUT" | grep -q '^1 passed, 0 failed' && ok "the scenario itself passed" ||
    bad "no summary line"
printf '%s\n' "$OUT" | grep -q '2 report(s) could not be written' && ok "the count is said" ||
    bad "no count of failed reports"
[ -s "$tmp"/fsize/latest/summary.txt ] && ok "the reports that fit were written" ||
    bad "summary.txt missing"
ls -a "$tmp"/fsize/latest/ | grep -q '\.tmp-' && bad "a temporary report file was left" ||
    ok "no temporary report file left"

# 2. A regular file named latest is left alone, with a warning naming it; the run reports.
mkdir "$tmp/file"
echo "my notes" >"$tmp/file/latest"
expect_out 0 "warning: $tmp/file/latest is a file, not a symbolic link" \
    "a file named latest: warning" "$S" run --out "$tmp/file" "$tmp/tiny.json"
[ "$(cat "$tmp/file/latest")" = "my notes" ] && ok "the file named latest is unchanged" ||
    bad "the file named latest was replaced"
ls -a "$tmp/file" | grep -q '^\.latest-' && bad "a .latest-PID link was left" ||
    ok "no temporary link left (file)"

# 3. A folder named latest likewise, and no stray .latest-PID link.
mkdir -p "$tmp/dir/latest"
expect_out 0 "warning: $tmp/dir/latest is a folder, not a symbolic link" \
    "a folder named latest: warning" "$S" run --out "$tmp/dir" "$tmp/tiny.json"
[ -d "$tmp/dir/latest" ] && [ ! -L "$tmp/dir/latest" ] && ok "the folder named latest is kept" ||
    bad "the folder named latest was touched"
ls -a "$tmp/dir" | grep -q '^\.latest-' && bad "a .latest-PID link was left" ||
    ok "no temporary link left (folder)"

# 4. A symbolic link is moved to the new run.
expect 0 "a first run" "$S" run --out "$tmp/link" "$tmp/tiny.json"
first=$(readlink "$tmp/link/latest")
expect 0 "a second run" "$S" run --out "$tmp/link" "$tmp/tiny.json"
second=$(readlink "$tmp/link/latest")
[ -n "$first" ] && [ "$first" != "$second" ] && [ -d "$tmp/link/$second" ] &&
    ok "latest follows the newest run" || bad "latest: '$first' then '$second'"


# 5. A passing scenario leaves no work folder, even one with subfolders: the weight sync of
# scenarios/nightly/sync-during-rollout.json publishes into artifacts/<id>/sync/.
# With --keep the folder and its sync/ subfolder stay.
expect 0 "a passing sync scenario" "$S" run --out "$tmp/sync" \
    "$SRC/scenarios/nightly/sync-during-rollout.json"
left=$(find "$tmp"/sync/latest/artifacts -mindepth 1 2>/dev/null | head -5)
[ -d "$tmp/sync/latest/artifacts" ] && [ -z "$left" ] &&
    ok "no work folder left by a passing sync scenario" ||
    bad "a passing sync scenario left its work folder: $left"
expect 0 "the same with --keep" "$S" run --keep --out "$tmp/synckeep" \
    "$SRC/scenarios/nightly/sync-during-rollout.json"
[ -d "$tmp"/synckeep/latest/artifacts/nightly-sync-during-rollout/sync ] &&
    ok "--keep keeps the work folder and its sync/ subfolder" || bad "--keep lost the sync folder"

# 5. A full disk during the disk transport: version 1's checkpoint (two shards of 527 KB) does
# not fit on a 512 KiB filesystem. The failed write removes its own v1.partial folder
# (sr_st_write_checkpoint), so the reports are written at once, with no kept version to remove,
# and the scenario's error names the OS reason. The filesystem is a real tmpfs of that size,
# which needs mount(2) (root with CAP_SYS_ADMIN): skipped, with the reason, where it cannot be
# mounted.
cat >"$tmp/disk.json" <<'EOF'
{
  "id": "reports-full-disk",
  "description": "the disk transport's checkpoint does not fit on the run's filesystem",
  "tags": ["reports"],
  "model": {"vocab": 2000, "layers": 4, "experts": 64, "topk": 4},
  "engines": {"count": 1, "dialect": "sglang"},
  "weights": {"transport": "disk"},
  "steps": [{"kind": "sync_weights", "version": 1, "deadline_ms": 20000}]
}
EOF
mkdir "$tmp/small"
if mount -t tmpfs -o size=512k tmpfs "$tmp/small" 2>"$tmp/mount.err"; then
    at_exit 'umount "$tmp/small" 2>/dev/null'
    expect_out 1 'ERROR +reports-full-disk .*io\.error: .*v1\.partial/.*: No space left on device' \
        "a full disk in the disk transport: the scenario's error, exit 1" \
        "$S" run --out "$tmp/small/out" "$tmp/disk.json"
    for f in summary.txt results.json junit.xml report.html; do
        [ -s "$tmp/small/out/latest/$f" ] && ok "full disk: $f written" || bad "full disk: no $f"
    done
    printf '%s\n' "$OUT" | grep -q 'not written' && bad "full disk: a report not written: $OUT"
    printf '%s\n' "$OUT" | grep -q 'no room for the reports' &&
        bad "full disk: the failed write left its partial folder for the reports to remove: $OUT"
    [ -z "$(find "$tmp/small" -name '*.partial')" ] && ok "full disk: no .partial folder left" ||
        bad "full disk: left $(find "$tmp/small" -name '*.partial')"
    umount "$tmp/small" && at_exit ''
else
    echo "skip: a full disk in the disk transport: cannot mount a 512 KiB tmpfs ($(cat "$tmp/mount.err"))"
fi

# 6. The disk fills after a failed scenario kept its weight versions (1 MB of checkpoint) and
# before the reports: the reports come first, so the kept versions are removed (said on stderr)
# and the reports written (not: every report but the first failing with ENOSPC, exit 3). Deterministic: a wrapper puts a FIFO where summary.txt's temporary file will
# be, the harness waits there to write its first report (its wchan is wait_for_partner), the test
# then fills the tmpfs to the last block and reads the FIFO.
cat >"$tmp/kept.json" <<'EOF'
{
  "id": "reports-kept-versions",
  "description": "a disk sync, then a check that fails: the artifacts keep version 1",
  "tags": ["reports"],
  "model": {"vocab": 2000, "layers": 4, "experts": 64, "topk": 4},
  "engines": {"count": 1, "dialect": "sglang"},
  "weights": {"transport": "disk"},
  "steps": [{"kind": "sync_weights", "version": 1, "deadline_ms": 20000},
            {"kind": "check_state", "weight_version": 5}]
}
EOF
cat >"$tmp/fifo-wrap.sh" <<EOF
#!/bin/sh
prev=
for a in "\$@"; do [ "\$prev" = --config ] && cfg=\$a; prev=\$a; done
mkfifo "\${cfg%/artifacts/*}/.summary.txt.tmp-\$SYNCROLL_PARENT_PID"
exec "$S" "\$@"
EOF
chmod +x "$tmp/fifo-wrap.sh"
mkdir "$tmp/fill"
if mount -t tmpfs -o size=4m tmpfs "$tmp/fill" 2>"$tmp/mount.err"; then
    at_exit 'umount "$tmp/fill" 2>/dev/null'
    SYNCROLL_ENGINE="$tmp/fifo-wrap.sh" "$S" run --out "$tmp/fill/out" "$tmp/kept.json" \
        >"$tmp/fill.log" 2>&1 &
    pid=$!
    n=0
    while [ "$(cat "/proc/$pid/task/$pid/wchan" 2>/dev/null)" != wait_for_partner ] &&
        kill -0 "$pid" 2>/dev/null && [ "$n" -lt 300 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    if [ "$(cat "/proc/$pid/task/$pid/wchan" 2>/dev/null)" = wait_for_partner ]; then
        dd if=/dev/zero of="$tmp/fill/filler" bs=4096 2>/dev/null
        [ "$(df -k "$tmp/fill" | awk 'NR == 2 { print $4 }')" -eq 0 ] && ok "kept versions: disk full" ||
            bad "kept versions: the disk is not full"
        cat "$tmp"/fill/out/2*/.summary.txt.tmp-* >/dev/null
        wait "$pid"
        st=$?
        [ "$st" -eq 1 ] && ok "kept versions: exit 1 (the scenario failed)" ||
            bad "kept versions: exit $st: $(cat "$tmp/fill.log")"
        grep -q "no room for the reports: removed the weight versions kept in .*/artifacts/reports-kept-versions/sync" \
            "$tmp/fill.log" && ok "kept versions: their removal said" ||
            bad "kept versions: nothing said: $(cat "$tmp/fill.log")"
        grep -q "not written" "$tmp/fill.log" && bad "kept versions: $(cat "$tmp/fill.log")"
        for f in results.json junit.xml report.html; do
            [ -s "$tmp/fill/out/latest/$f" ] && ok "kept versions: $f written" ||
                bad "kept versions: no $f"
        done
        [ -f "$tmp/fill/out/latest/artifacts/reports-kept-versions/engine-0.log" ] &&
            ok "kept versions: the engine log stays" || bad "kept versions: the engine log went"
    else
        wchan=$(cat "/proc/$pid/task/$pid/wchan" 2>/dev/null)
        kill "$pid" 2>/dev/null
        cat "$tmp"/fill/out/2*/.summary.txt.tmp-* >/dev/null 2>&1
        wait "$pid"
        if [ "$wchan" = 0 ]; then
            echo "skip: the disk filling before the reports: this kernel hides /proc/PID/wchan"
        else
            bad "kept versions: the harness never waited on the FIFO: $(cat "$tmp/fill.log")"
        fi
    fi
    umount "$tmp/fill" && at_exit ''
else
    echo "skip: the disk filling before the reports: cannot mount a tmpfs ($(cat "$tmp/mount.err"))"
fi

# 6b. A report that cannot be written for a reason other than room (here EISDIR: a wrapper puts
# a folder where report.html's temporary file will be) keeps the weight versions a failed
# scenario keeps: removing them would not help (before: they were removed on any report
# failure). Exit 3, report.html named, sync/v1 still there.
cat >"$tmp/kept-small.json" <<'EOF'
{
  "id": "reports-kept-other",
  "description": "a disk sync, then a check that fails: the artifacts keep version 1",
  "tags": ["reports"],
  "model": {"vocab": 64, "layers": 1, "experts": 4, "topk": 2},
  "engines": {"count": 1, "dialect": "sglang"},
  "weights": {"transport": "disk"},
  "steps": [{"kind": "sync_weights", "version": 1, "deadline_ms": 20000},
            {"kind": "check_state", "weight_version": 5}]
}
EOF
cat >"$tmp/dir-wrap.sh" <<EOF
#!/bin/sh
prev=
for a in "\$@"; do [ "\$prev" = --config ] && cfg=\$a; prev=\$a; done
mkdir "\${cfg%/artifacts/*}/.report.html.tmp-\$SYNCROLL_PARENT_PID"
exec "$S" "\$@"
EOF
chmod +x "$tmp/dir-wrap.sh"
expect_out 3 'report\.html not written: .*/report\.html: cannot create .*: Is a directory' \
    "a report not written for another reason than room: exit 3, named" \
    env SYNCROLL_ENGINE="$tmp/dir-wrap.sh" "$S" run --out "$tmp/other" "$tmp/kept-small.json"
printf '%s\n' "$OUT" | grep -q 'no room for the reports' &&
    bad "another reason than room: the kept versions were removed: $OUT" ||
    ok "another reason than room: nothing said about room"
[ -s "$tmp"/other/latest/artifacts/reports-kept-other/sync/v1/model-00001-of-00002.safetensors ] &&
    ok "another reason than room: the kept version stays" ||
    bad "another reason than room: sync/v1 was removed"

# 7. An engine that fails to start: the scenario's error says how it ended
# and the end of its log, where the cause is (before: "... (still running)" at times, and no
# cause). The engine is a wrapper (SYNCROLL_ENGINE) that says why on stderr and exits 3.
cat >"$tmp/bad-engine.sh" <<'EOF'
#!/bin/sh
echo "first line of the log" >&2
echo "bad-engine: this engine refuses to start" >&2
exit 3
EOF
chmod +x "$tmp/bad-engine.sh"
expect_out 1 'engine\.crashed: .*closed its readiness pipe before reporting ready \(exited with status 3\) \(proc\.exited\); its log ends: first line of the log \| bad-engine: this engine refuses to start$' \
    "an engine that fails to start: its exit status and log tail" \
    env SYNCROLL_ENGINE="$tmp/bad-engine.sh" "$S" run --out "$tmp/bad" "$tmp/tiny.json"
grep -q 'its log ends: first line of the log | bad-engine: this engine refuses to start' \
    "$tmp"/bad/latest/results.json && ok "the log tail is in results.json" ||
    bad "results.json lacks the log tail"

finish
