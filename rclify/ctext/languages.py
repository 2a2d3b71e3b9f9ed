"""Which language a file of the tree is in, by its name: C or C++, source or header.

Plain names only, no parser: the lock table and the profiler, which spatch's Python and
`rclify profile` load, read these without libclang (tests/test_light_imports.py).
"""

from pathlib import Path

CXX_SOURCES = (".cpp", ".cc", ".cxx")
CXX_HEADERS = (".hpp", ".hh", ".hxx")
CXX_SUFFIXES = CXX_SOURCES + CXX_HEADERS
HEADERS = (".h", *CXX_HEADERS)
SPATCH_CXX = "--c++=17"  # spatch 1.1.1 needs a version to read `auto`


def is_cxx(path: str | Path) -> bool:
    return Path(path).suffix in CXX_SUFFIXES


def is_cxx_source(path: str | Path) -> bool:
    return Path(path).suffix in CXX_SOURCES


def is_header(path: str | Path) -> bool:
    return Path(path).suffix in HEADERS


def by_language(files: list[str]) -> list[tuple[list[str], list[str]]]:
    """files split into one spatch run for C and one for C++ (with its --c++ flag), each
    [(files, extra spatch arguments)], empty groups left out."""
    groups = [([f for f in files if not is_cxx(f)], []), ([f for f in files if is_cxx(f)], [SPATCH_CXX])]
    return [(group, args) for group, args in groups if group]
