#!/bin/sh
# Transforms reduced/ (or the folder given) with rclify and compares it with the original under ccsynch.
cd "$(dirname "$0")/../../../.." && exec python3 -m tests.fuzz.reduce check --dir "tests/fuzz/findings/20261126-gen-output-ccsynch-s303-p0000_000/${1:-reduced}" --alg ccsynch --class output --verbose --rclify /tmp/old
