#!/bin/sh
# Transforms reduced/ (or the folder given) with rclify and compares it with the original under rcl.
cd "$(dirname "$0")/../../../.." && exec python3 -m tests.fuzz.reduce check --dir "tests/fuzz/findings/20261126-gen-output-rcl-s404-p0000_005/${1:-reduced}" --alg rcl --class output --verbose --rclify /tmp/old
