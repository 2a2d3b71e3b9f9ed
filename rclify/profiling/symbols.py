"""Names for the addresses the preload profiler records: ELF headers, load bases, nm and addr2line.

The profiler writes raw addresses (a lock's address, the return address of its pthread_mutex_init
call) and a copy of the program's /proc/self/maps.  Here they become names:
  - the ELF object an address falls in, from the maps and the object's PT_LOAD headers;
  - a statically initialised lock's variable, from the object's symbol table (`nm -S -l`, which
    also gives the defining file when the binary has debug info);
  - an init call site's function and file:line, from `addr2line -f -i` (with -g), else the
    enclosing function symbol plus an offset.
"""

import re
import shutil
import struct
import subprocess
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

PAGE = 4096
PT_LOAD, PT_INTERP = 1, 3
ET_EXEC, ET_DYN = 2, 3


@dataclass
class ElfInfo:
    path: str
    etype: int
    interp: str | None  # PT_INTERP: None means statically linked (or not a program)
    loads: list[tuple[int, int, int]]  # (p_offset, p_vaddr, p_memsz)


def read_elf(path: str | Path) -> ElfInfo | None:
    """ELF header and program headers, or None when the file is not a 64/32-bit ELF file."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 52 or head[:4] != b"\x7fELF":
                return None
            is64, endian = head[4] == 2, "<" if head[5] == 1 else ">"
            if is64:
                etype, phoff, phentsize, phnum = (
                    struct.unpack_from(endian + "H", head, 16)[0],
                    struct.unpack_from(endian + "Q", head, 32)[0],
                    *struct.unpack_from(endian + "HH", head, 54),
                )
            else:
                etype, phoff, phentsize, phnum = (
                    struct.unpack_from(endian + "H", head, 16)[0],
                    struct.unpack_from(endian + "I", head, 28)[0],
                    *struct.unpack_from(endian + "HH", head, 42),
                )
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            interp, loads = None, []
            for i in range(phnum):
                entry = table[i * phentsize : (i + 1) * phentsize]
                if is64:
                    ptype, _, offset, vaddr, _, filesz, memsz, _ = struct.unpack_from(endian + "IIQQQQQQ", entry)
                else:
                    ptype, offset, vaddr, _, filesz, memsz, _, _ = struct.unpack_from(endian + "IIIIIIII", entry)
                if ptype == PT_LOAD:
                    loads.append((offset, vaddr, memsz))
                elif ptype == PT_INTERP:
                    f.seek(offset)
                    interp = f.read(filesz).rstrip(b"\0").decode(errors="replace")
                    f.seek(phoff + phentsize * phnum)
            return ElfInfo(str(path), etype, interp, loads)
    except (OSError, struct.error):
        return None


@dataclass
class LoadedObject:
    path: str
    bias: int  # run-time address = vaddr + bias
    low: int
    high: int  # [low, high): the object's whole image, .bss included

    @property
    def name(self) -> str:
        return Path(self.path).name


def loaded_objects(maps_lines: list[str]) -> list[LoadedObject]:
    """Objects and their load bias, from a copy of /proc/PID/maps."""
    first: dict[str, tuple[int, int]] = {}  # path -> (start, offset) of its lowest-offset mapping
    for line in maps_lines:
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        start = int(parts[0].split("-")[0], 16)
        offset = int(parts[2], 16)
        path = parts[5].strip()
        if path not in first or offset < first[path][1]:
            first[path] = (start, offset)
    objects = []
    for path, (start, offset) in first.items():
        info = read_elf(path)
        if not info or not info.loads:
            continue
        load = min(info.loads, key=lambda l: l[0])
        bias = 0 if info.etype == ET_EXEC else start - offset - ((load[1] & ~(PAGE - 1)) - (load[0] & ~(PAGE - 1)))
        low = bias + min(l[1] for l in info.loads)
        high = bias + max(l[1] + l[2] for l in info.loads)
        objects.append(LoadedObject(path, bias, low, high))
    return sorted(objects, key=lambda o: o.low)


def object_at(objects: list[LoadedObject], addr: int) -> LoadedObject | None:
    for obj in objects:
        if obj.low <= addr < obj.high:
            return obj
    return None


@dataclass
class Symbol:
    value: int
    size: int
    kind: str  # nm's letter
    name: str
    file: str | None = None  # defining file (with debug info)


@dataclass
class SymbolTable:
    data: list[Symbol] = field(default_factory=list)
    funcs: list[Symbol] = field(default_factory=list)

    def data_at(self, vaddr: int) -> Symbol | None:
        return _lookup(self.data, vaddr, sized=True)

    def func_at(self, vaddr: int) -> Symbol | None:
        return _lookup(self.funcs, vaddr, sized=False)


def _lookup(symbols: list[Symbol], vaddr: int, sized: bool) -> Symbol | None:
    i = bisect_right([s.value for s in symbols], vaddr) - 1
    if i < 0:
        return None
    sym = symbols[i]
    if sized and not (sym.value <= vaddr < sym.value + max(sym.size, 1)):
        return None
    return sym


_NM_LINE = re.compile(r"^([0-9a-fA-F]+)\s+(?:([0-9a-fA-F]+)\s+)?([A-Za-z])\s+(\S+)(?:\s+(.+):\d+)?$")


@lru_cache(maxsize=64)
def symbols(path: str) -> SymbolTable:
    """Symbols of an object with `nm` (the full table, else the dynamic one); empty without nm."""
    table = SymbolTable()
    if shutil.which("nm") is None:
        return table
    for args in (["nm", "-S", "-l", "--defined-only", path], ["nm", "-D", "-S", "--defined-only", path]):
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        for line in proc.stdout.splitlines():
            m = _NM_LINE.match(line.strip())
            if not m:
                continue
            sym = Symbol(int(m.group(1), 16), int(m.group(2) or "0", 16), m.group(3), m.group(4), m.group(5))
            if sym.kind in "bBdDsSgGrR":
                table.data.append(sym)
            elif sym.kind in "tTwWiI":
                table.funcs.append(sym)
        if table.data or table.funcs:
            break
    table.data.sort(key=lambda s: s.value)
    table.funcs.sort(key=lambda s: s.value)
    return table


@dataclass
class Site:
    function: str | None
    file: str | None  # full path as recorded in the debug info
    line: int | None


def code_sites(path: str, vaddrs: list[int]) -> dict[int, Site]:
    """addr2line for each vaddr: its innermost (inlined) frame; unresolved ones are left out."""
    return {v: chain[0] for v, chain in code_chains(path, vaddrs).items()}


def code_chains(path: str, vaddrs: list[int]) -> dict[int, list[Site]]:
    """addr2line for each vaddr: its source frames, the innermost inlined one first and the
    function the code is in last; frames without a source line are left out, and so are
    addresses with none."""
    if not vaddrs or shutil.which("addr2line") is None:
        return {}
    args = ["addr2line", "-a", "-f", "-i", "-C", "-e", path] + [hex(v) for v in vaddrs]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    result: dict[int, list[Site]] = {}
    current = None
    lines = proc.stdout.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.fullmatch(r"0x[0-9a-fA-F]+", line):
            current = int(line, 16)
            i += 1
            continue
        func = line
        loc = lines[i + 1] if i + 1 < len(lines) else "??:0"
        i += 2
        if current is None:
            continue
        loc = loc.split(" (discriminator")[0]
        file, _, lineno = loc.rpartition(":")
        if file in ("", "??") or not lineno.isdigit() or lineno == "0":
            continue
        result.setdefault(current, []).append(Site(None if func == "??" else func, file, int(lineno)))
    return result


_DIE = re.compile(r"^\s*<(\d+)><([0-9a-f]+)>: Abbrev Number: \d+ \((DW_TAG_\w+)\)")
_ATTRIBUTE = re.compile(r"^\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*: (.*)$")
_MUTEX_TYPE = "pthread_mutex_t"  # a glibc typedef: C's and C++'s (std::mutex holds one) locks


@dataclass(frozen=True)
class VariableTypes:
    """What an object's debug information says of its variables, by link-time address."""

    described: frozenset[int]  # every variable it gives a type and an address
    mutexes: frozenset[int]  # those whose type is or holds a pthread_mutex_t

    def may_hold_mutex(self, vaddr: int) -> bool:
        """A variable of a pthread_mutex_t type, or one the debug information does not describe
        (a file built without -g): what it holds cannot be told."""
        return vaddr in self.mutexes or vaddr not in self.described


@lru_cache(maxsize=16)
def variable_types(path: str) -> VariableTypes | None:
    """Which of the object's variables are or hold a pthread_mutex_t (a struct or array of them,
    through typedefs), read from its DWARF debug information with readelf; None when it has none
    to say which (built without -g, stripped, no readelf)."""
    if shutil.which("readelf") is None:
        return None
    try:
        proc = subprocess.Popen(["readelf", "--wide", "--debug-dump=info", path], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, errors="replace")
    except OSError:
        return None
    dies: dict[int, dict] = {}  # offset -> {"tag", attributes..., "children": [offsets]}
    parents: list[tuple[int, int]] = []  # (depth, offset) of the DIEs enclosing the current one
    current: dict | None = None
    with proc:
        for line in proc.stdout:
            if (m := _DIE.match(line)) is not None:
                depth, offset = int(m.group(1)), int(m.group(2), 16)
                while parents and parents[-1][0] >= depth:
                    parents.pop()
                current = dies[offset] = {"tag": m.group(3), "children": []}
                if parents:
                    dies[parents[-1][1]]["children"].append(offset)
                parents.append((depth, offset))
            elif current is not None and (m := _ATTRIBUTE.match(line)) is not None:
                current[m.group(1)] = m.group(2).strip()
    variables = {offset: die for offset, die in dies.items()
                 if die["tag"] == "DW_TAG_variable" and "DW_OP_addr:" in die.get("DW_AT_location", "")}
    if not variables:
        return None
    holds: dict[int, bool] = {}

    def reference(value: str | None) -> int | None:
        m = re.search(r"<0x([0-9a-f]+)>", value or "")
        return int(m.group(1), 16) if m else None

    def holds_mutex(offset: int | None) -> bool:
        if offset is None or offset not in dies:
            return False
        if offset not in holds:
            holds[offset] = False  # a type that refers to itself (a list node) holds no more through that
            die = dies[offset]
            name = die.get("DW_AT_name", "").rpartition(": ")[2] or die.get("DW_AT_name", "")
            holds[offset] = (die["tag"] == "DW_TAG_typedef" and name == _MUTEX_TYPE) \
                or (die["tag"] != "DW_TAG_pointer_type" and holds_mutex(reference(die.get("DW_AT_type")))) \
                or (die["tag"] in ("DW_TAG_structure_type", "DW_TAG_union_type", "DW_TAG_class_type")
                    and any(dies[c]["tag"] in ("DW_TAG_member", "DW_TAG_inheritance")
                            and holds_mutex(reference(dies[c].get("DW_AT_type"))) for c in die["children"]))
        return holds[offset]

    described, mutexes = set(), set()
    for die in variables.values():
        address = int(re.search(r"DW_OP_addr: ([0-9a-f]+)", die["DW_AT_location"]).group(1), 16)
        described.add(address)
        declared = dies.get(reference(die.get("DW_AT_specification")) or reference(die.get("DW_AT_abstract_origin")), {})
        if holds_mutex(reference(die.get("DW_AT_type") or declared.get("DW_AT_type"))):
            mutexes.add(address)
    return VariableTypes(frozenset(described), frozenset(mutexes))
