from rclify import lock_config
from rclify.lock_config import LockEntry
import pytest
from rclify.errors import UsageError


def test_render_parse_round_trip():
    entries = [
        LockEntry("items.c:cache_lock", "rcl", 1, 3, "&cache_lock; 4 regions, 3 extracted", "31% in CS"),
        LockEntry("thread.c:item_locks[]", description="&item_locks[...]"),
    ]
    parsed = lock_config.parse(lock_config.render(entries))
    assert parsed == sorted(entries, key=lambda e: e.lock_id)


def test_merge_keeps_hand_edits_and_drops_vanished_locks():
    edited = lock_config.parse(
        lock_config.render([LockEntry("a.c:m", description="old"), LockEntry("a.c:gone")]).replace(
            '"a.c:m", RCL_ALG_POSIX, 0, -1', '"a.c:m", RCL_ALG_RCL, 2, 1'
        )
    )
    merged = lock_config.merge([LockEntry("a.c:m", description="new"), LockEntry("b.c:n")], edited)
    assert [(e.lock_id, e.algorithm, e.server, e.cpu, e.description) for e in merged] == [
        ("a.c:m", "rcl", 2, 1, "new"),
        ("b.c:n", "posix", 0, -1, ""),
    ]


def test_malformed_entry_names_the_line():
    with pytest.raises(UsageError, match=r"cfg:2: cannot read"):
        lock_config.parse('/* x */\n#define RCLIFY_LOCK_x RCL_LOCK_CONFIG("x", RCL_ALG_RCL)\n', "cfg")


def test_unknown_algorithm_is_an_error():
    with pytest.raises(UsageError, match="unknown algorithm RCL_ALG_FOO"):
        lock_config.parse('#define RCLIFY_LOCK_x RCL_LOCK_CONFIG("x", RCL_ALG_FOO, 0, -1)\n')


def test_generated_header_compiles(tmp_path):
    import subprocess
    from rclify.paths import RUNTIME_DIR

    (tmp_path / "lock_config.h").write_text(lock_config.render([LockEntry("main.c:m", "rcl", 1, -1)]))
    (tmp_path / "t.c").write_text(
        '#include "lock_config.h"\nstatic rcl_mutex_t m = RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_main_c_m);\n'
        "int main(void) { return m.config.server == 1 ? 0 : 1; }\n"
    )
    subprocess.run(
        ["cc", "-std=c99", "-Wall", "-Werror", f"-I{RUNTIME_DIR / 'include'}", "-c", "t.c"],
        cwd=tmp_path, check=True,
    )
