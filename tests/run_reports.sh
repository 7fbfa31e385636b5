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
# scenarios/nightly/sync-during-rollout.json publishes into artifacts/<id>/sync/ (issue 29).
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

finish
