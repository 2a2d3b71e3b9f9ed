"""rclify run on Debian's memcached, untransformed, built by its own build (slow: a fetch once, a
build, its quick tests twice).  Its full suite under `*=mcs` and `*=ccsynch` was run by hand
(docs/runtime.md, "memcached"); here: the quick tests under mcs and ccsynch, and a per-lock spec
that puts one lock on RCL, counted by RCLIFY_STATS."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rclify.paths import PROJECT_ROOT
from rclify.targets.memcached import source as memcached

PRISTINE = PROJECT_ROOT / "work" / "memcached.pristine"
QUICK = ["t/getset.t", "t/incrdecr.t", "t/noreply.t", "t/flush-all.t"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    src = memcached.fetch(tmp_path_factory.mktemp("mc") / "memcached", fresh=True, pristine=PRISTINE,
                          log=lambda m: None).working
    jobs = str(os.cpu_count() or 1)
    proc = subprocess.run(["bash", "-c", f"./configure && make -j{jobs} memcached-debug sizes testapp timedrun"],
                          cwd=src, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return src


def _rclify_run(tree: Path, spec: str, *command: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rclify", "run", "--locks", spec, "--", *command], cwd=tree,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)), **kw)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["*=mcs", "*=ccsynch"])
def test_quick_tests_under_rclify_run(tree, spec):
    proc = _rclify_run(tree, spec, "prove", *QUICK, timeout=1800)
    assert proc.returncode == 0 and "Result: PASS" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]


@pytest.mark.slow
def test_per_lock_spec_puts_one_lock_on_rcl(tree):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), RCLIFY_STATS="1")
    server = subprocess.Popen([sys.executable, "-m", "rclify", "run", "--locks", "slabs.c:slabs_lock=rcl", "--",
                               "./memcached-debug", "-u", "root", "-p", str(port), "-U", "0", "-A", "-t", "4"],
                              cwd=tree, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        for _ in range(300):
            try:
                conn = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("memcached did not start under rclify run")
        f = conn.makefile("rwb")
        for i in range(500):
            f.write(b"set k%d 0 0 5\r\nhello\r\n" % i)
            f.flush()
            assert f.readline() == b"STORED\r\n"
        f.write(b"shutdown\r\n")
        f.flush()
        _, err = server.communicate(timeout=120)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == 0, err[-2000:]
    rows = [line.split() for line in err.splitlines() if ".c:" in line and not line.startswith("rclify")]
    assert len(rows) == 1 and rows[0][0] == "slabs.c:slabs_lock" and int(rows[0][4]) >= 500, err[-2000:]
