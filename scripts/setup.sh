#!/usr/bin/env bash
# Installs everything rclify needs on a fresh Debian bookworm machine (run as root, or with sudo):
# the system packages with apt, rclify itself into a virtual environment, .venv/ in the checkout
# (editable, with its test and chart extras), never into the system Python.  Then builds the
# runtime.  Safe to run again: it skips what is already there.  The other scripts run .venv/bin/python.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

APT_PACKAGES=(coccinelle build-essential pkg-config python3 python3-pip python3-venv
              libmemcached-tools autoconf automake libevent-dev dpkg-dev perl cmake bear meson ninja-build
              manpages-dev  # the C library facts of rclify/platform/ (tests/test_platform.py derives them again)
              csmith libcsmith-dev cvise gcc-12-source)  # the differential fuzzer (tests/fuzz, docs/fuzzing.md)
missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done

# Debian source packages (apt-get source memcached) need a deb-src entry.
if ! grep -rqs '^deb-src\|^Types:.*deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "setup: adding a deb-src entry for Debian sources"
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        $SUDO sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources
    else
        grep -h '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' | $SUDO tee /etc/apt/sources.list.d/rclify-src.list >/dev/null
    fi
    need_update=1
fi

if ((${#missing[@]})) || [ -n "${need_update:-}" ]; then
    echo "setup: apt-get install ${missing[*]}"
    $SUDO apt-get update -qq
    ((${#missing[@]})) && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

spatch --version | head -1 | grep -q 'version 1\.1\.' || { echo "setup: spatch 1.1.x required" >&2; exit 1; }

# rclify with its test extras and the chart extra (rclify report --png is tested too), in .venv/
VENV=.venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup: creating the virtual environment $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[test,chart]'

"$VENV/bin/python" -m rclify flags --libs >/dev/null   # builds the runtime into the user's cache
echo "setup: ok"
