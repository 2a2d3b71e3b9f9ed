#!/usr/bin/env bash
# The README's main job on the built-in default program, Debian's memcached:
#   set up the machine, fetch memcached's Debian source (patches applied) into work/memcached,
#   transform it, then build it against the runtime and run its whole test suite with every
#   lock on RCL.  Rerunning reuses the downloaded source and the working copy as they are.
# Extra arguments go to `rclify check` (e.g. --locks '*=posix' --locks '*=rcl', --jobs 2).
set -euo pipefail
cd "$(dirname "$0")/.."

TREE=work/memcached

echo "== setup"
bash scripts/setup.sh
PY=.venv/bin/python  # the virtual environment setup.sh installed rclify into

echo "== fetch Debian's memcached source into $TREE"
"$PY" -m rclify.targets.memcached fetch "$TREE"

if [ ! -f "$TREE/config.h" ]; then
    echo "== configure $TREE (transform analyses the tree with its config.h)"
    (cd "$TREE" && ./configure -q)
fi

echo "== rclify transform $TREE"
if ! "$PY" -m rclify transform "$TREE"; then
    echo "main: 'rclify transform $TREE' failed (above); stopping: checking an untransformed tree" \
         "would prove nothing about the transformation" >&2
    exit 1
fi

echo "== rclify check $TREE"
if (($#)); then
    exec "$PY" -m rclify check "$TREE" "$@"
fi
exec "$PY" -m rclify check "$TREE" --locks '*=rcl'
