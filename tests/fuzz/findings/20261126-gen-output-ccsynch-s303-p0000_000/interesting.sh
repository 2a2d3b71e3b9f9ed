#!/bin/sh
# cvise's interestingness test: the program in the current folder still differs (output under ccsynch)
here=$(pwd)
for f in helpers.c; do cp "/work/main/tests/fuzz/findings/20261126-gen-output-ccsynch-s303-p0000_000/reduced/$f" "$here/" 2>/dev/null; done
cd /work/main && exec env PYTHONPATH=/work/main /root/.pyenv/versions/3.11.7/bin/python3 -m tests.fuzz.reduce check --dir "$here" --alg ccsynch --class output --rclify "${RCLIFY_CHECKOUT:-/work/main}"
