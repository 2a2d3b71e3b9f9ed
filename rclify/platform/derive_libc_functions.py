"""Derives libc_functions.tsv, what the platform's own manual says of each C library function,
from the Linux man-pages (Debian's manpages-dev: sections 2 and 3) and pthreads(7):

    name  page  library  headers  thread_safety  noreturn  cancellation

  page           the page that documents it (NAME section), e.g. printf.3
  library        its LIBRARY section, shortened: libc, libm, librt, libpthread, libdl, ... ("" when
                 the page has none: the system calls of section 2 are libc's)
  headers        the #include lines of its SYNOPSIS
  thread_safety  its ATTRIBUTES table's "Thread safety" value (attributes(7)): "MT-Safe locale",
                 "MT-Unsafe race:strtok", ... ("" when the page gives none)
  noreturn       1 when its SYNOPSIS declares it [[noreturn]]
  cancellation   must / may: a cancellation point by POSIX (pthreads(7)); "" otherwise.  The
                 cancellation points are the functions that may block.

It also writes libc_constants.tsv: the values, in the system's headers, of the constants that
thread_bound.toml names as arguments that bind a call (CLOCK_THREAD_CPUTIME_ID, ...), by
compiling a probe with the system's cc.

Run it again when the man pages or the headers change (python3 -m rclify.platform.derive_libc_functions);
tests/test_platform.py checks the committed table against the installed pages.
"""

import argparse
import gzip
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

MAN = Path("/usr/share/man")
OUT = Path(__file__).with_name("libc_functions.tsv")
CONSTANTS = Path(__file__).with_name("libc_constants.tsv")
CLASSES = Path(__file__).with_name("thread_bound.toml")
_PROBE_HEADERS = ("time.h", "sys/resource.h", "signal.h")
COLUMNS = ("name", "page", "library", "headers", "thread_safety", "noreturn", "cancellation")
_LIBRARIES = {  # LIBRARY section's first words -> a short name
    "Standard C library": "libc", "Math library": "libm", "Real-time library": "librt",
    "POSIX threads library": "libpthread", "Dynamic linking library": "libdl",
    "Password hashing library": "libcrypt", "Resolver library": "libresolv",
    "Asynchronous I/O library": "librt",
}


@dataclass
class Entry:
    name: str
    page: str
    library: str = ""
    headers: list[str] = field(default_factory=list)
    thread_safety: str = ""
    noreturn: bool = False
    cancellation: str = ""

    def row(self) -> str:
        return "\t".join((self.name, self.page, self.library, ",".join(self.headers), self.thread_safety,
                          "1" if self.noreturn else "0", self.cancellation))


def _read(path: Path) -> str:
    raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    return raw.decode("utf-8", "replace")


def _plain(line: str) -> str:
    """One line of roff as text: requests' quoting and font escapes gone."""
    line = re.sub(r"^\.(?:B|I|BI|IB|BR|RB|IR|RI|SM)\s+", "", line)
    line = line.replace('"', "")
    line = re.sub(r"\\f[BIRP]|\\f\(..|\\&|\\%", "", line)
    return line.replace("\\-", "-").replace("\\~", " ").replace("\\ ", " ")


def _sections(text: str) -> dict[str, list[str]]:
    out, name = {}, None
    for line in text.splitlines():
        if line.startswith(".SH "):
            name = line[4:].strip().strip('"')
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return out


def parse_page(text: str, page: str) -> list[Entry]:
    """The functions one page documents (none for a .so link or a page without NAME)."""
    if text.startswith(".so "):
        return []
    sec = _sections(text)
    if "NAME" not in sec:
        return []
    names_line = " ".join(_plain(l) for l in sec["NAME"] if not l.startswith(".")).split(" - ")[0]
    names = [n.strip() for n in names_line.split(",") if re.fullmatch(r"\s*[A-Za-z_]\w*\s*", n)]
    library = ""
    for line in sec.get("LIBRARY", []):
        for words, short in _LIBRARIES.items():
            if line.startswith(words):
                library = short
    synopsis = [_plain(l) for l in sec.get("SYNOPSIS", [])]
    headers = sorted({m for l in synopsis for m in re.findall(r"#include <([^>]+)>", l)})
    noreturn = {m for l in synopsis if "[[noreturn]]" in l for m in re.findall(r"(\w+)\s*\(", l)[:1]}
    safety = _attributes(sec.get("ATTRIBUTES", []))
    return [Entry(n, page, library, headers, safety.get(n, ""), n in noreturn) for n in names]


def _attributes(lines: list[str]) -> dict[str, str]:
    """The ATTRIBUTES table's Thread safety value of each function it names."""
    out = {}
    for row in _table_rows(lines):
        if len(row) >= 3 and row[1].strip() == "Thread safety":
            for name in re.findall(r"(\w+)\s*\(\)", row[0]):
                out[name] = " ".join(row[2].split())
    return out


def _table_rows(lines: list[str]) -> list[list[str]]:
    """A tbl(1) table's data rows as cells of text: tabs part cells, T{ .. T} cells span lines."""
    body, started = [], False
    for raw in lines:
        if raw.startswith(".TS"):
            started, body = True, []
        elif raw.startswith(".TE"):
            break
        elif started:
            body.append(raw)
    format_end = next((i for i, l in enumerate(body) if l.rstrip().endswith(".") and "\t" not in l), -1)
    rows, row, cell, in_block = [], [], [], False
    for raw in body[format_end + 1:]:
        if in_block:
            if raw.startswith("T}"):
                in_block = False
                row.append(" ".join(cell))
                rest = raw[2:]
                if rest.startswith("\t"):
                    rest = rest[1:]
                    row, ended = _cells(rest, row, rows)
                    in_block = ended
                    cell = []
                else:
                    rows.append(row)
                    row = []
            elif not raw.startswith(".") or raw.startswith((".BR", ".B ", ".I ", ".IR", ".BI", ".RB")):
                cell.append(_plain(raw).strip())
            continue
        if raw.startswith(".") and not raw.startswith((".BR", ".B ", ".I ")):
            continue
        row, in_block = _cells(raw, row, rows)
        cell = []
    return rows


def _cells(text: str, row: list[str], rows: list[list[str]]) -> tuple[list[str], bool]:
    """Adds the cells of one line to row; (the row being built, whether a T{ block is open)."""
    parts = text.split("\t")
    for k, part in enumerate(parts):
        if part == "T{" and k == len(parts) - 1:
            return row, True
        row.append(_plain(part))
    rows.append(row)
    return [], False


def cancellation_points(text: str) -> dict[str, str]:
    """pthreads(7): the functions that must / may be cancellation points."""
    out, mode = {}, None
    for line in text.splitlines():
        if "are required to be cancelation points" in line or "are required to be cancellation points" in line:
            mode = "must"
        elif "may be cancelation points" in line or "may be cancellation points" in line:
            mode = "may"
        elif line.startswith(".SS") or line.startswith(".SH"):
            if mode == "may":
                mode = None
        elif mode and (m := re.match(r"^(\w+)\(\)", line)):
            out.setdefault(m.group(1), mode)
    return out


def derive(man: Path = MAN) -> list[Entry]:
    entries: dict[str, Entry] = {}
    for section in ("2", "3"):
        for path in sorted((man / f"man{section}").iterdir()):
            if not path.name.endswith((f".{section}", f".{section}.gz")):
                continue  # 3o, 3ssl, 3pm: other languages' and libraries' pages
            page = path.resolve().name.removesuffix(".gz")
            for e in parse_page(_read(path), page):
                if section == "2" and not e.library:
                    e.library = "libc"
                if not e.library:
                    continue  # a page of another package (no LIBRARY section)
                old = entries.get(e.name)
                if old is None or (old.page != e.name + "." + section and page.startswith(e.name + ".")):
                    entries[e.name] = e  # a function's own page wins over one that mentions it
    pthreads = next((man / "man7").glob("pthreads.7*"), None)
    if pthreads is not None:
        for name, mode in cancellation_points(_read(pthreads)).items():
            if name in entries:
                entries[name].cancellation = mode
    return sorted(entries.values(), key=lambda e: e.name)


def render(entries: list[Entry]) -> str:
    head = ("# Derived by rclify/platform/derive_libc_functions.py from the man-pages "
            "(manpages-dev) and pthreads(7); do not edit by hand.\n")
    return head + "\t".join(COLUMNS) + "\n" + "".join(e.row() + "\n" for e in entries)


def constants(names: list[str]) -> dict[str, int]:
    """The values of these constants in the system's headers (a probe compiled and run)."""
    probe = "".join(f"#include <{h}>\n" for h in _PROBE_HEADERS) + "#include <stdio.h>\nint main(void) {\n"
    probe += "".join(f'    printf("{n}\\t%ld\\n", (long)({n}));\n' for n in names) + "    return 0;\n}\n"
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
        src.write_text("#define _GNU_SOURCE\n" + probe)
        subprocess.run(["cc", "-o", str(exe), str(src)], check=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {name: int(value) for name, value in (line.split("\t") for line in out.splitlines())}


def bound_argument_names() -> list[str]:
    spec = tomllib.loads(CLASSES.read_text())
    return sorted({n for name, cls in spec.items() if name != "aliases"
                   for names in cls.get("bound_arguments", {}).values() for n in names})


def render_constants(values: dict[str, int]) -> str:
    return ("# Derived by rclify/platform/derive_libc_functions.py from the system's headers; do not edit by hand.\n"
            "name\tvalue\n" + "".join(f"{n}\t{v}\n" for n, v in sorted(values.items())))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--man", type=Path, default=MAN)
    ap.add_argument("--output", type=Path, default=OUT)
    args = ap.parse_args(argv)
    entries = derive(args.man)
    if not entries:
        print(f"no man pages under {args.man} (apt-get install manpages-dev)", file=sys.stderr)
        return 1
    args.output.write_text(render(entries))
    CONSTANTS.write_text(render_constants(constants(bound_argument_names())))
    print(f"{len(entries)} functions -> {args.output}; constants -> {CONSTANTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
