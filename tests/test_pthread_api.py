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


def _init_regex() -> re.Pattern:
    text = (ROOT / "semantic_patches/api/calls.cocci").read_text()
    block = text[text.index("@mutex_init_call@"):]
    return re.compile(re.search(r'identifier init =~ "([^"]+)"', block).group(1))


def test_the_api_rewrite_renames_every_function_but_the_inits_which_take_an_id():
    renamed = _regex("api/calls.cocci", "twin_call")
    inits = {"pthread_mutex_init", "pthread_rwlock_init"}
    assert {f.name for f in pthread_api.API if renamed.match(f.name)} == {f.name for f in pthread_api.API} - inits
    assert {f.name for f in pthread_api.API if _init_regex().match(f.name)} == inits
    assert "- init@p(E, A)\n+ rcl_init(E, A, cfg)" in (ROOT / "semantic_patches/api/calls.cocci").read_text()


def test_discovery_matches_every_function_of_the_table():
    """The mutex and condvar calls as call sites, the rwlock calls as rwlock sites."""
    matched = _regex("discover/pthread_sites.cocci", "pthread_call")
    rwlock = _regex("discover/pthread_sites.cocci", "other_lock_call")
    assert [f.name for f in pthread_api.API if not (matched.match(f.name) or rwlock.match(f.name))] == []
    assert [f.name for f in pthread_api.API if rwlock.match(f.name)] == list(pthread_api.RWLOCK)


def test_every_function_has_its_runtime_twin_declared():
    header = (ROOT / "runtime/include/rclify.h").read_text()
    missing = [f.runtime for f in pthread_api.API if not re.search(rf"\b{f.runtime}\s*\(", header)]
    assert missing == []


def test_the_derived_lists():
    assert pthread_api.LOCK_OPERATIONS["pthread_mutex_clocklock"] == "timedlock"
    assert pthread_api.LOCK_ARITY == {"pthread_mutex_timedlock": 2, "pthread_mutex_clocklock": 3}
    # rwlocks are no lock operation of the regions, nor a call the analysis of where a section runs knows
    assert not any(name.startswith("pthread_rwlock_") for name in pthread_api.LOCK_OPERATIONS)
    assert not any(name.startswith("pthread_rwlock_") for name in pthread_api.DISCOVERED)
    assert len(pthread_api.RWLOCK) == 11
    assert {"pthread_cond_clockwait", "rcl_cond_wait"} <= pthread_api.WAITS
    assert "pthread_cond_signal" not in pthread_api.WAITS
    assert pthread_api.KEEP_POSIX == ("pthread_mutex_consistent", "pthread_mutex_consistent_np",
                                      "pthread_mutex_getprioceiling", "pthread_mutex_setprioceiling")
