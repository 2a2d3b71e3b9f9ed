#!/bin/sh
# cvise's interestingness test: the program in the current folder still differs (exit under posix)
here=$(pwd)
for f in ; do cp "/work/main/tests/fuzz/findings/20261128-torture-exit-posix-s3503-p0032_015/reduced/$f" "$here/" 2>/dev/null; done
cd /work/main && exec env PYTHONPATH=/work/main /work/main/.venv/bin/python -m tests.fuzz.reduce check --dir "$here" --alg posix --class exit --rclify /tmp/h35b/rcl-118be8e --old-c
