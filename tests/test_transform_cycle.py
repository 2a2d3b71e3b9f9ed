"""Edit, transform again, revert: a transformed tree stays the user's to edit (docs/transform.md,
"Re-running transform").  New and changed code is taken up, what did not change stays byte for
byte, an edit that cannot be carried back is refused, and revert never drops an edit silently."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rclify import runtime_build
from test_transform_cli import rclify, snapshot

CORPUS = Path(__file__).resolve().parent.parent / "corpus"

RESET = """
static pthread_mutex_t reset_lock = PTHREAD_MUTEX_INITIALIZER;
static long resets;

void reset_counter(void)
{
    pthread_mutex_lock(&reset_lock);
    resets++;
    pthread_mutex_unlock(&reset_lock);
}
"""


@pytest.fixture
def tree(tmp_path):
    dest = tmp_path / "prog"
    shutil.copytree(CORPUS / "plain_global_counter", dest)
    return dest


def transformed(tree: Path) -> dict[str, bytes]:
    rclify("transform", tree, "-q")
    return snapshot(tree)


def fresh_transform(tmp_path: Path, program: str, files: dict[str, str]) -> dict[str, str]:
    """What a first transform makes of a corpus program with files replaced (the reference a
    re-transform must equal)."""
    ref = tmp_path / "reference"
    shutil.copytree(CORPUS / program, ref)
    for rel, text in files.items():
        (ref / rel).write_text(text)
    rclify("transform", ref, "-q")
    return {p.name: p.read_text() for p in ref.iterdir() if p.suffix in (".c", ".h")}


def test_a_function_added_after_the_transform_is_transformed_and_the_rest_kept(tree, tmp_path):
    original = (tree / "counter.c").read_text()
    rclify("transform", tree, "-q")
    config = tree / "lock_config.h"
    config.write_text(config.read_text().replace("RCL_ALG_POSIX, 0, -1", "RCL_ALG_RCL, 1, -1"))  # hand edit
    written = (tree / "counter.c").read_text()
    with (tree / "counter.c").open("a") as f:
        f.write(RESET)

    out = rclify("transform", tree, "-q").stdout
    assert "updated 1 now" in out and "edits carried into the originals: counter.c" in out
    text = (tree / "counter.c").read_text()
    assert text.startswith(written), "code that did not change was rewritten"
    assert "static int rclify_cs_reset_counter_1(void *rclify_arg)" in text
    assert "RCL_EXECUTE(&reset_lock, rclify_cs_reset_counter_1" in text
    assert "pthread_mutex_lock" not in text[len(written):]
    # exactly what a first transform of the original with the new function makes
    assert text == fresh_transform(tmp_path, "plain_global_counter", {"counter.c": original + RESET})["counter.c"]
    entries = config.read_text()
    assert '"counter.c:reset_lock", RCL_ALG_POSIX' in entries
    assert '"counter.c:counter_lock", RCL_ALG_RCL, 1, -1' in entries, "hand edit of lock_config.h lost"
    # the new original is the old one with the user's function, in its untransformed form
    assert (tree / ".rclify/backup/counter.c").read_text() == original + RESET
    before = snapshot(tree)
    assert "no C file changed since" in rclify("transform", tree, "-q").stdout
    assert snapshot(tree) == before


DRAIN = """
long registry_drain(void)
{
    long taken;

    pthread_mutex_lock(&registry_lock);
    taken = registry_writes;
    registry_writes = 0;
    pthread_mutex_unlock(&registry_lock);
    return taken;
}
"""


def test_new_code_in_one_file_leaves_the_others_byte_for_byte_and_runs(tmp_path):
    tree = tmp_path / "two"
    shutil.copytree(CORPUS / "lockexpr_extern_two_files", tree)
    main_c = (tree / "main.c").read_text()
    before = transformed(tree)
    stamps = {name: (tree / name).stat().st_mtime_ns for name in ("registry.c", "registry.h")}
    # new code locks the existing lock the way the original code does (pthread), after the section
    path = tree / "main.c"
    text = path.read_text()
    call_end = text.index("\n", text.index("RCL_EXECUTE(&registry_lock")) + 1
    call_end = text.index("        }\n", call_end) + len("        }\n")  # the call site's block
    text = text[:call_end] + "        sched_yield();\n" + text[call_end:]
    path.write_text(text.replace("int main(void)", DRAIN.lstrip() + "\nint main(void)"))

    rclify("transform", tree, "-q")
    for name in ("registry.c", "registry.h"):
        assert (tree / name).read_bytes() == before[name] and (tree / name).stat().st_mtime_ns == stamps[name]
    new_original = (tree / ".rclify/backup/main.c").read_text()
    # the statement added after the section's call is after the unlock in the original
    assert "        pthread_mutex_unlock(&registry_lock);\n        sched_yield();\n    }\n" in new_original
    assert new_original == main_c.replace(
        "        pthread_mutex_unlock(&registry_lock);\n    }\n",
        "        pthread_mutex_unlock(&registry_lock);\n        sched_yield();\n    }\n",
    ).replace("int main(void)", DRAIN.lstrip() + "\nint main(void)")
    assert (tree / "main.c").read_text() == fresh_transform(
        tmp_path, "lockexpr_extern_two_files", {"main.c": new_original})["main.c"]
    assert "rclify_cs_registry_drain_1" in (tree / "main.c").read_text()
    if shutil.which("cc") is None:
        return
    runtime_build.build_runtime()
    subprocess.run(["cc", "-O1", "-pthread", *runtime_build.cflags(), "main.c", "registry.c", "-o", "prog",
                    *runtime_build.libs()], cwd=tree, check=True, timeout=120)
    run = subprocess.run(["./prog"], cwd=tree, capture_output=True, text=True, timeout=60,
                         env={"RCLIFY_LOCKS": "*=rcl", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0 and run.stdout == (CORPUS / "lockexpr_extern_two_files/expected.txt").read_text()


def test_an_edited_section_is_extracted_again_with_the_edit(tree):
    original = (tree / "counter.c").read_text()
    rclify("transform", tree, "-q")
    path = tree / "counter.c"
    written = path.read_text()
    # the section's body now lives in rclify_cs_worker_1(); the user edits a line there
    assert written.count("        counter++;\n") == 1
    path.write_text(written.replace("        counter++;\n", "        counter += 1;\n"))
    rclify("transform", tree, "-q")
    assert path.read_text() == written.replace("        counter++;\n", "        counter += 1;\n")
    assert (tree / ".rclify/backup/counter.c").read_text() == original.replace(
        "        counter++;\n", "        counter += 1;\n")


def test_an_edit_of_generated_code_is_refused_and_nothing_written(tree):
    rclify("transform", tree, "-q")
    path = tree / "counter.c"
    path.write_text(path.read_text().replace("sum_of_ids += rclify_ctx->id;", "sum_of_ids += 2 * rclify_ctx->id;")
                    + RESET)
    before = snapshot(tree)
    edited = path.read_text().splitlines().index("        sum_of_ids += 2 * rclify_ctx->id;") + 1
    proc = rclify("transform", tree, check=False)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "rclify transform: error: edited after the transform inside code that rclify generated or rewrote: "
        f"counter.c:{edited} (the new code names rclify_ctx"), err
    assert f"rclify revert --force {tree}" in err[0]
    assert snapshot(tree) == before


def test_a_removed_lock_leaves_lock_config(tree):
    rclify("transform", tree, "-q")
    with (tree / "counter.c").open("a") as f:
        f.write(RESET)
    rclify("transform", tree, "-q")
    config = tree / "lock_config.h"
    assert "counter.c:reset_lock" in config.read_text()
    path = tree / "counter.c"
    text = path.read_text()
    # the user deletes the function and its lock, as they now read (transformed)
    path.write_text(text[:text.index("\nstatic rcl_mutex_t reset_lock")])
    rclify("transform", tree, "-q")
    assert "reset_lock" not in config.read_text()
    assert "counter.c:counter_lock" in config.read_text()
    assert "reset" not in (tree / ".rclify/backup/counter.c").read_text()


def test_revert_refuses_to_drop_an_edit_and_force_discards_it(tree):
    original = snapshot(tree)
    rclify("transform", tree, "-q")
    with (tree / "counter.c").open("a") as f:
        f.write("/* the user's note */\n")
    (tree / "new.c").write_text("int added_later(void) { return 1; }\n")
    before = snapshot(tree)
    proc = rclify("revert", tree, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"rclify revert: error: counter.c changed since the transform; reverting would lose those changes, "
        f"so nothing was restored: run `rclify transform {tree}` first to carry them into the originals "
        f"(then revert), or `rclify revert --force {tree}` to discard them"
    ]
    assert snapshot(tree) == before
    out = rclify("revert", tree, "--force").stdout
    assert "discarded the edits made since the transform to: counter.c" in out
    after = snapshot(tree)
    assert after.pop("new.c") == b"int added_later(void) { return 1; }\n"  # added later: never touched
    assert {k: v for k, v in after.items() if k != "lock_config.h"} == original


def test_revert_after_transforming_again_restores_the_originals_with_the_edits(tree):
    original = (tree / "counter.c").read_text()
    rclify("transform", tree, "-q")
    path = tree / "counter.c"
    path.write_text(path.read_text().replace('    printf("counter=%ld\\n", counter);\n',
                                             '    printf("counter=%ld\\n", counter);\n    puts("done");\n')
                    + RESET)
    (tree / "extra.c").write_text("#include <pthread.h>\nstatic pthread_mutex_t x = PTHREAD_MUTEX_INITIALIZER;\n"
                                  "int bump(int *v)\n{\n    pthread_mutex_lock(&x);\n    (*v)++;\n"
                                  "    pthread_mutex_unlock(&x);\n    return 0;\n}\n")
    extra = (tree / "extra.c").read_bytes()
    rclify("transform", tree, "-q")
    assert "rclify_cs_bump_1" in (tree / "extra.c").read_text()
    rclify("revert", tree)
    assert path.read_text() == original.replace('    printf("counter=%ld\\n", counter);\n',
                                                '    printf("counter=%ld\\n", counter);\n    puts("done");\n') + RESET
    assert (tree / "extra.c").read_bytes() == extra
    assert not (tree / ".rclify").exists()


def test_dry_run_on_a_transformed_tree_shows_what_a_new_transform_adds(tree):
    rclify("transform", tree, "-q")
    with (tree / "counter.c").open("a") as f:
        f.write(RESET)
    before = snapshot(tree)
    out = rclify("transform", tree, "--dry-run", "-q").stdout
    assert snapshot(tree) == before
    diff = [line for line in out.splitlines() if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert "-static pthread_mutex_t reset_lock = PTHREAD_MUTEX_INITIALIZER;" in diff
    assert "+static int rclify_cs_reset_counter_1(void *rclify_arg)" in diff
    assert any(line.startswith('+#define RCLIFY_LOCK_counter_c_reset_lock ') for line in diff)
    assert not any("worker" in line for line in diff), "the diff shows code that does not change"
    assert "would update 1 now" in out
    rclify("transform", tree, "-q")
    assert rclify("transform", tree, "--dry-run", "-q").stdout.splitlines() == [
        f"{tree}: already transformed, and no C file changed since: nothing changed"]


def test_generated_code_copied_into_another_file_is_refused(tree):
    rclify("transform", tree, "-q")
    (tree / "copy.c").write_text((tree / "counter.c").read_text())
    before = snapshot(tree)
    proc = rclify("transform", tree, check=False)
    assert proc.returncode == 2 and "copy.c: rclify-generated code (rclify_cs_*)" in proc.stderr
    assert snapshot(tree) == before


def test_state_records_what_rclify_wrote(tree):
    rclify("transform", tree, "-q")
    state = json.loads((tree / ".rclify/state.json").read_text())
    assert state["files"] == ["counter.c"] and state["config"] == "lock_config.h"
    assert (tree / ".rclify/written/counter.c").read_bytes() == (tree / "counter.c").read_bytes()
    assert set(state["sources"]) == {"counter.c"}
