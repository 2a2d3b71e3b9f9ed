#!/usr/bin/env bash
# Runs each test binary given, with a time limit, and prints one line per test then a summary,
# then the end of the log of each failed test.  RCLIFY_TEST_TIMEOUT overrides the limit (seconds).
set -u
dir=$1; shift
limit=${RCLIFY_TEST_TIMEOUT:-120}
pass=0; fail=0; failed=()
for bin in "$@"; do
    name=$(basename "$bin")
    start=$(date +%s.%N)
    timeout -k 5 "$limit" "$bin" > "$dir/$name.log" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
        pass=$((pass + 1)); status=ok
    else
        fail=$((fail + 1)); failed+=("$name")
        case $rc in
            124|137) status="FAILED (timed out after ${limit}s)" ;;
            3) status="FAILED (watchdog: deadlock?)" ;;
            66) status="FAILED (ThreadSanitizer report)" ;;
            *) status="FAILED (exit $rc)" ;;
        esac
    fi
    printf '  %-32s %s  %.1fs\n' "$name" "$status" "$(awk -v a="$start" -v b="$(date +%s.%N)" "BEGIN{print b-a}")"
done
for name in "${failed[@]}"; do echo "--- $name ($dir/$name.log)"; tail -30 "$dir/$name.log"; done
echo "runtime: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
