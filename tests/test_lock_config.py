import re
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


# ---- waiting policies, and the algorithm list in the header's comments ---------------------------


def test_policy_round_trips_and_auto_is_written_as_before():
    entries = [LockEntry("a.c:spun", "ttas", 0, -1, policy="spin"), LockEntry("a.c:plain", "ttas")]
    text = lock_config.render(entries)
    assert '#define RCLIFY_LOCK_a_c_spun RCL_LOCK_CONFIG_POLICY("a.c:spun", RCL_ALG_TTAS, 0, -1, RCL_WAIT_SPIN)\n' in text
    # no policy (auto): the four-field macro, byte for byte what files held before policies existed
    assert '#define RCLIFY_LOCK_a_c_plain RCL_LOCK_CONFIG("a.c:plain", RCL_ALG_TTAS, 0, -1)\n' in text
    assert lock_config.parse(text) == entries[::-1]
    assert [e.choice for e in lock_config.parse(text)] == ["ttas", "ttas/spin"]


def test_header_comments_list_every_registered_algorithm_and_policy(monkeypatch):
    from rclify import algorithms

    text = lock_config.render([LockEntry("a.c:m")])
    for alg in algorithms.load():
        assert f" *                 {alg.constant:<16} {alg.description}\n" in text
    for policy in algorithms.POLICIES:
        assert f" *                 {policy.constant:<16} {policy.description}\n" in text
    assert "RCL_LOCK_CONFIG_POLICY(" in text and "PATTERN=ALG[/POLICY][:SERVER[@CPU]]" in text
    # the list comes from the registry, not from a copy: a registry with one more algorithm shows it
    registered = algorithms.load()
    extra = algorithms.Algorithm("NEWLOCK", "newlock", "a lock registered after this test was written", 99)
    monkeypatch.setattr(algorithms, "load", lambda: (*registered, extra))
    assert f" *                 {'RCL_ALG_NEWLOCK':<16} a lock registered after this test was written\n" in \
        lock_config.render([LockEntry("a.c:m")])


def test_hand_edited_policy_forms_are_read():
    text = ('#define RCLIFY_LOCK_x RCL_LOCK_CONFIG_POLICY( "x" , RCL_ALG_TTAS , 1 , 0 , RCL_WAIT_YIELD )\n'
            '#define RCLIFY_LOCK_y RCL_LOCK_CONFIG_POLICY("y", RCL_ALG_TTAS, 0, -1, 3)\n'
            '#define RCLIFY_LOCK_z RCL_LOCK_CONFIG_POLICY("z", RCL_ALG_RCL, 0, -1, RCL_WAIT_AUTO)\n')
    got = [(e.lock_id, e.algorithm, e.server, e.cpu, e.policy) for e in lock_config.parse(text)]
    assert got == [("x", "ttas", 1, 0, "yield"), ("y", "ttas", 0, -1, "park"), ("z", "rcl", 0, -1, "auto")]
    # written back in the canonical form: a number becomes its name, auto the four-field macro
    rendered = lock_config.render(lock_config.parse(text))
    assert 'RCL_LOCK_CONFIG_POLICY("y", RCL_ALG_TTAS, 0, -1, RCL_WAIT_PARK)' in rendered
    assert 'RCL_LOCK_CONFIG("z", RCL_ALG_RCL, 0, -1)' in rendered


@pytest.mark.parametrize(
    "line, error",
    [
        ('RCL_LOCK_CONFIG_POLICY("items.c:m", RCL_ALG_TTAS, 0, -1, RCL_WAIT_NAP)',
         'cfg:2: lock "items.c:m": unknown waiting policy RCL_WAIT_NAP '
         "(expected one of RCL_WAIT_AUTO, RCL_WAIT_SPIN, RCL_WAIT_YIELD, RCL_WAIT_PARK)"),
        ('RCL_LOCK_CONFIG_POLICY("items.c:m", RCL_ALG_TTAS, 0, -1, 4)', 'cfg:2: lock "items.c:m": unknown waiting policy 4'),
        ('RCL_LOCK_CONFIG_POLICY("items.c:m", RCL_ALG_NOSUCH, 0, -1, RCL_WAIT_PARK)',
         'cfg:2: lock "items.c:m": unknown algorithm RCL_ALG_NOSUCH (expected one of RCL_ALG_POSIX, RCL_ALG_RCL'),
        ('RCL_LOCK_CONFIG("items.c:m", RCL_ALG_TTAS, 0, -1, RCL_WAIT_PARK)', "cfg:2: cannot read this lock entry"),
        ('RCL_LOCK_CONFIG_POLICY("items.c:m", RCL_ALG_TTAS, 0, -1)', "cfg:2: cannot read this lock entry"),
    ],
)
def test_bad_policy_or_algorithm_is_one_line_naming_the_lock(line, error):
    with pytest.raises(UsageError) as info:
        lock_config.parse(f"/* items.c:m */\n#define RCLIFY_LOCK_items_c_m {line}\n", "cfg")
    message = str(info.value)
    assert message.startswith(error) and "\n" not in message


def test_merge_keeps_a_hand_set_policy():
    edited = lock_config.parse(lock_config.render([LockEntry("a.c:m", "ttas", policy="park")]))
    merged = lock_config.merge([LockEntry("a.c:m", description="new")], edited)
    assert (merged[0].algorithm, merged[0].policy, merged[0].description) == ("ttas", "park", "new")


@pytest.mark.parametrize(
    "spec, error",
    [("*=ttas/park", None), ("*=rcl/auto:1@0", None), ("a.c:*=ttas/spin, *=posix", None), ("*=posix/spin", None),
     ("*=ttas/bogus", "unknown waiting policy 'bogus' (expected one of auto, spin, yield, park)"),
     ("*=nosuch/park", "unknown algorithm 'nosuch'"), ("*=ttas/", "expected PATTERN=ALG[/POLICY][:SERVER[@CPU]]"),
     ("*=ttas/park/spin", "expected PATTERN=ALG")],
)
def test_locks_option_accepts_a_policy(spec, error):
    # '*=posix/spin' passes here: which policies an algorithm honours only the runtime knows, and
    # it refuses the entry at start-up (runtime/tests/bad_config.c)
    if error is None:
        assert lock_config.validate_override(spec) == spec
    else:
        with pytest.raises(UsageError, match=re.escape(error)):
            lock_config.validate_override(spec)


def test_generated_policy_entry_compiles_to_the_runtime_constant(tmp_path):
    import subprocess
    from rclify.paths import RUNTIME_DIR

    (tmp_path / "lock_config.h").write_text(lock_config.render([LockEntry("main.c:m", "ttas", 0, -1, policy="yield")]))
    (tmp_path / "t.c").write_text(
        '#include "lock_config.h"\nstatic rcl_mutex_t m = RCL_MUTEX_INITIALIZER(RCLIFY_LOCK_main_c_m);\n'
        "_Static_assert(RCL_WAIT_YIELD == 2, \"rclify.algorithms.POLICIES numbers\");\n"
        "int main(void) { return m.config.policy == RCL_WAIT_YIELD && m.config.algorithm == RCL_ALG_TTAS ? 0 : 1; }\n"
    )
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", f"-I{RUNTIME_DIR / 'include'}", "-c", "t.c"],
                   cwd=tmp_path, check=True)
