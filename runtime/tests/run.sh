#!/usr/bin/env bash
# Runs each test binary given, with a time limit, and prints one line per test then a summary.
set -u
dir=$1; shift
pass=0; fail=0; failed=()
for bin in "$@"; do
    name=$(basename "$bin")
    start=$(date +%s.%N)
    if timeout 300 "$bin" > "$dir/$name.log" 2>&1; then
        pass=$((pass + 1)); status=ok
    else
        fail=$((fail + 1)); status="FAILED (exit $?)"; failed+=("$name")
    fi
    printf '  %-32s %s  %.1fs\n' "$name" "$status" "$(awk -v a="$start" -v b="$(date +%s.%N)" "BEGIN{print b-a}")"
done
for name in "${failed[@]}"; do echo "--- $name"; tail -30 "$dir/$name.log"; done
echo "runtime: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
