"""The pthread API table (rclify/pthread_api.py) is the one list of names: the semantic patches
that match these calls agree with it, and so does the runtime's header."""

import re
from pathlib import Path

from rclify import pthread_api

ROOT = Path(__file__).resolve().parent.parent


def _regex(cocci: str, rule: str) -> re.Pattern:
    text = (ROOT / "semantic_patches" / cocci).read_text()
    block = text[text.index(f"@{rule}@"):]
    return re.compile(re.search(r'identifier fn =~ "([^"]+)"', block).group(1))


def test_the_api_rewrite_renames_every_function_but_the_mutex_init_which_takes_an_id():
    renamed = _regex("api/calls.cocci", "twin_call")
    assert {f.name for f in pthread_api.API if renamed.match(f.name)} == \
        {f.name for f in pthread_api.API} - {"pthread_mutex_init"}
    assert "- pthread_mutex_init@p(E, A)" in (ROOT / "semantic_patches/api/calls.cocci").read_text()


def test_discovery_matches_every_function_of_the_table():
    matched = _regex("discover/pthread_sites.cocci", "pthread_call")
    assert [f.name for f in pthread_api.API if not matched.match(f.name)] == []


def test_every_function_has_its_runtime_twin_declared():
    header = (ROOT / "runtime/include/rclify.h").read_text()
    missing = [f.runtime for f in pthread_api.API if not re.search(rf"\b{f.runtime}\s*\(", header)]
    assert missing == []


def test_the_derived_lists():
    assert pthread_api.LOCK_OPERATIONS["pthread_mutex_clocklock"] == "timedlock"
    assert pthread_api.LOCK_ARITY == {"pthread_mutex_timedlock": 2, "pthread_mutex_clocklock": 3}
    assert {"pthread_cond_clockwait", "rcl_cond_wait"} <= pthread_api.WAITS
    assert "pthread_cond_signal" not in pthread_api.WAITS
    assert pthread_api.KEEP_POSIX == ("pthread_mutex_consistent", "pthread_mutex_consistent_np",
                                      "pthread_mutex_getprioceiling", "pthread_mutex_setprioceiling")
