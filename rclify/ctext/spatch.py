"""Running Coccinelle's spatch: one process over many files, JSON records back, parse errors read.

Every semantic patch rclify runs goes through run_spatch(), which sets the flags they all need
(`--no-includes`, the macro file, a per-file timeout), runs the patches' script:python rules in
rclify's own interpreter (`--python`: a venv or pipx install works without being activated), and
puts semantic_patches/lib and the directory rclify is imported from on their PYTHONPATH.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Callable

from rclify import disk_space
from rclify.ctext.preprocessor import define_around
from rclify.errors import ParseError, ToolMissingError
from rclify.paths import IMPORT_ROOT, SEMANTIC_PATCHES_DIR, require
from rclify.progress import step as progress_step

SMPL_LIB = SEMANTIC_PATCHES_DIR / "lib"
MACRO_FILE = SMPL_LIB / "macros.h"  # macros spatch cannot parse by itself
TIMEOUT_PER_FILE = 120  # seconds spatch may spend on one file before giving up on it
# spatch wraps a rewritten line longer than this: the line count, and with it __LINE__, would change
MAX_WIDTH = 10000
RECORD_PREFIX = "RCLIFY-JSON "  # how rclify_smpl.emit() marks a JSON record on stdout


def check_version() -> None:
    if shutil.which("spatch") is None:
        raise ToolMissingError("spatch not found: apt-get install coccinelle (version 1.1.x)")
    out = subprocess.run(["spatch", "--version"], capture_output=True, text=True).stdout
    if "version 1.1." not in out:
        first = out.splitlines()[0] if out else "unknown"
        raise ToolMissingError(f"spatch 1.1.x is required, found: {first}")


def spatch_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    path = [str(SMPL_LIB), str(IMPORT_ROOT)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.update(extra or {})
    return env


_VIRTUAL = re.compile(r"^virtual\b.*\n", re.M)


def chain(patches: list[Path], into: Path) -> Path:
    """One semantic patch with the rules of patches in order (spatch applies each rule to what the
    ones before made): the first whole, the others without their `virtual` lines (spatch refuses
    a mode declared twice; they must declare the same).  One patch alone is itself."""
    if len(patches) == 1:
        return patches[0]
    texts = [require(patch).read_text() for patch in patches]
    into.write_text("\n".join([texts[0], *(_VIRTUAL.sub("", text) for text in texts[1:])]))
    return into


def run_spatch(patch: Path, root: Path, files: list[str], jobs: int, mode: str = "json",
               extra_env: dict[str, str] | None = None, extra_args: list[str] | None = None,
               timeout: int = 900, macro_file: Path = MACRO_FILE,
               progress: Callable[[str], None] | None = None) -> tuple[list[dict], dict[str, str], str]:
    """Runs one semantic patch over files (relative to root) in one spatch process.
    macro_file: MACRO_FILE, or one that adds the tree's declaration macros to it (tree_macros.py);
    progress: where to say how many files spatch has taken up, while it runs long (progress.py).

    Returns (json records, {file: first parse error}, raw stdout).
    """
    require(patch)
    cmd = ["spatch", "--sp-file", str(patch), "-D", mode, "--python", sys.executable,
           "--no-includes", "--verbose-parsing",
           "--macro-file", str(macro_file),
           "--timeout", str(TIMEOUT_PER_FILE), "--no-show-diff",
           "--max-width", str(MAX_WIDTH), *(extra_args or [])]
    if jobs > 1 and len(files) > 1:
        cmd += ["-j", str(min(jobs, len(files)))]
    # spatch's file list goes in a file: trees may have thousands of files
    with tempfile.NamedTemporaryFile("w", suffix=".list", delete=False) as listing:
        listing.write("\n\n".join(files) + "\n")  # a blank line between files: one group each
    cmd += ["--file-groups", listing.name]
    try:
        with progress_step(progress, f"spatch {patch.name}", len(files), "files taken up") as step:
            proc = _run_counting_files(cmd, root, spatch_env(extra_env), timeout, step.advance)
    except FileNotFoundError:
        raise ToolMissingError("spatch (Coccinelle) is needed: apt-get install coccinelle") from None
    except subprocess.TimeoutExpired:
        raise ParseError(f"spatch {patch.name} did not finish within {timeout}s over {len(files)} files") from None
    finally:
        os.unlink(listing.name)
    if proc.returncode != 0:
        disk_space.check_room(Path(root))  # a full disk crashes spatch (exit -11): said as such
        tail = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith("Warning"))[-2000:]

        raise ParseError(f"spatch {patch.name} failed (exit {proc.returncode}): {tail.strip()}")
    records = [json.loads(line[len(RECORD_PREFIX):]) for line in proc.stdout.splitlines()
               if line.startswith(RECORD_PREFIX)]
    return records, parse_errors(proc.stderr, root), proc.stdout


_HANDLING = "HANDLING: "  # what spatch prints on standard error as it takes up a file (a group)


def _run_counting_files(cmd: list[str], root: Path, env: dict[str, str], timeout: int,
                        taken_up: Callable[[], None]) -> subprocess.CompletedProcess:
    """subprocess.run(cmd, capture_output=True, timeout=timeout), calling taken_up() for each
    file spatch takes up (its HANDLING lines, read as they come).  Its records go to a temporary
    file: read while stderr is, a pipe could fill and stop it."""
    with tempfile.TemporaryFile("w+", errors="surrogateescape") as stdout:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True,
                                errors="surrogateescape")
        killed = threading.Event()  # by the timeout
        timer = threading.Timer(timeout, lambda: (killed.set(), proc.kill()))
        timer.start()
        try:
            stderr = []
            for line in proc.stderr:
                stderr.append(line)
                if line.startswith(_HANDLING):
                    taken_up()
            proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:  # an exception here (^C): spatch does not outlive it
                proc.kill()
                proc.wait()
            proc.stderr.close()
        if killed.is_set():
            raise subprocess.TimeoutExpired(cmd, timeout)
        stdout.seek(0)
        return subprocess.CompletedProcess(cmd, proc.returncode, stdout.read(), "".join(stderr))


_PARSE_ERROR = re.compile(
    r'^parse error\s*\n = File "(?P<file>[^"]+)", line (?P<line>\d+), column (?P<col>\d+), charpos = \d+\n'
    r"\s*around = '(?P<around>.*)',\n\s*whole content = (?P<content>.*)$",
    re.M,
)


def parse_errors(stderr: str, root: Path) -> dict[str, str]:
    """{file: first parse error}; errors inside #define directives are ignored: spatch reads each
    #define apart from the functions, so a body it cannot parse as C (a scoped lock macro's
    `#define WITH_LOCK(m) for (...; ...; pthread_mutex_unlock(&(m)))`, a declaration fragment)
    costs no function, and no call: discovery compares the calls spatch saw with a token scan
    (discover.unseen_calls), the API rewrite's text pass rewrites what spatch left in such bodies."""
    found: dict[str, tuple[int, str]] = {}
    texts: dict[str, str] = {}
    for m in _PARSE_ERROR.finditer(stderr):
        file, line = m.group("file"), int(m.group("line"))
        if file not in texts:
            try:
                texts[file] = (root / file).read_text(errors="surrogateescape")
            except OSError:
                texts[file] = ""
        if define_around(texts[file], line) is not None:
            continue
        message = f"{file}:{line}:{m.group('col')}: parse error near '{m.group('around')}': {m.group('content').strip()}"
        if file not in found or line < found[file][0]:
            found[file] = (line, message)
    return {file: message for file, (_, message) in found.items()}
