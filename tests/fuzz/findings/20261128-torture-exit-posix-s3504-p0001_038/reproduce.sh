#!/bin/sh
# Transforms reduced/ (or the folder given) with rclify (this checkout's, or the one RCLIFY_CHECKOUT
# names: the finding was made with info.json's "rclify") and compares it with the original under
# posix: prints "DIFFERS: ..." while the bug is there.
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.." && exec python3 -m tests.fuzz.reduce check --dir "$here/${1:-reduced}" \
    --alg posix --class exit --verbose --rclify "${RCLIFY_CHECKOUT:-$(pwd)}" --old-c
