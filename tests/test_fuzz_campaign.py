"""The differential fuzzer's fixed-seed campaign (docs/fuzzing.md): generated programs (rclify's own
generator and Csmith with lock regions inserted), transformed in batches, each run original against
transformed under posix, rcl, ccsynch, mcs and fc, every feature generated (tests/fuzz/__main__.py:
FIXED_DISABLED lists the features of known, unfixed bugs: none); `python -m tests.fuzz --hours 2` runs longer.
Then a fixed-seed sample of GCC's gcc.c-torture/execute programs with regions inserted (tests/fuzz/torture.py,
`python -m tests.fuzz --torture-sample`), and the insertion's rules on small files."""

import random
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fuzz.__main__ import FIXED, FIXED_DISABLED  # noqa: E402
from tests.fuzz.campaign import Options, run_campaign  # noqa: E402

EXTRACTION_FLOOR = 0.80  # regions extracted / regions found, over the kept programs


@pytest.mark.skipif(shutil.which("csmith") is None or shutil.which("spatch") is None,
                    reason="csmith and spatch come with scripts/setup.sh")
def test_fixed_seed_campaign(tmp_path):
    opts = Options(**FIXED, disabled=FIXED_DISABLED, work=tmp_path / "work", jobs=2, keep=False,
                   progress=False)
    log = []
    stats = run_campaign(opts, log=log.append)
    summary = stats.summary()
    assert stats.programs == FIXED["programs"]
    # a generated program that does not compile, fails or is nondeterministic untransformed is a
    # generator bug; Csmith programs that loop past the timeout are discarded by design
    generator_bugs = {k: v for k, v in stats.discarded.items() if k.startswith("gen:")}
    assert not generator_bugs, summary
    assert stats.kept >= 0.8 * stats.programs, summary
    assert stats.transform_failures == 0, (summary, log)
    assert not stats.transformed_build_failures, stats.transformed_build_failures
    assert not stats.differences, [(d["batch"], d["program"], d["algorithm"], d["expected"], d["got"])
                                   for d in stats.differences]
    assert stats.regions >= 5 * stats.kept, summary  # the programs do have regions
    assert stats.extraction_rate >= EXTRACTION_FLOOR, summary
    assert stats.runs == stats.kept * len(opts.algorithms)


# --- GCC's torture programs (tests/fuzz/torture.py), and the region insertion they share with Csmith

from tests.fuzz import regions, torture  # noqa: E402
from tests.fuzz.__main__ import TORTURE_SAMPLE  # noqa: E402

# Regions extracted / found in the torture sample: 0.92 once rclify parsed old C as gcc does
# (implicit int and undeclared functions warnings, not libclang's errors: 0.73 before).
TORTURE_EXTRACTION_FLOOR = 0.85


def test_torture_sample(tmp_path):
    try:
        suite = torture.ensure_suite()  # installs gcc-12-source with apt when missing
    except torture.SuiteMissing as err:
        pytest.skip(f"GCC's torture suite cannot be had here: {err}")
    opts = Options(**TORTURE_SAMPLE, work=tmp_path / "work", jobs=2, keep=False, progress=False)
    log = []
    stats = run_campaign(opts, log=log.append)
    summary = stats.summary()
    assert stats.programs == TORTURE_SAMPLE["programs"] == stats.by_source["torture"]
    names, skipped = torture.survey(suite.folder)
    assert summary["torture"]["candidates"] == len(names) > 1000, summary["torture"]
    assert len(names) + sum(skipped.values()) == len(list(suite.folder.glob("*.c")))
    assert set(skipped) <= {"dg-options", "dg-require", "dg-skip-if", "dg-xfail", "local-include", "no-main"}
    # every discard is a torture program's, by a cause the campaign names
    causes = {k.split(":", 1)[1].rsplit("-", 1)[0] if "-exit-" in k else k.split(":", 1)[1]
              for k in stats.discarded}
    assert all(k.startswith("torture:") for k in stats.discarded), summary["discarded"]
    assert causes <= {"clang-parse-error", "no-region", "original-does-not-compile", "original-exit",
                      "original-timeout", "inserted-does-not-compile", "inserted-exit", "inserted-timeout",
                      "inserted-differs"}, summary["discarded"]
    assert stats.kept >= 0.8 * stats.programs, summary
    assert stats.transform_failures == 0, (summary, log)
    assert not stats.transformed_build_failures, stats.transformed_build_failures
    assert not stats.differences, [(d["batch"], d["program"], d["origin"]["torture"], d["algorithm"],
                                    d["expected"], d["got"]) for d in stats.differences]
    assert stats.regions >= 2 * stats.kept, summary
    assert stats.extraction_rate >= TORTURE_EXTRACTION_FLOOR, summary
    assert stats.runs == stats.kept * len(opts.algorithms)


@pytest.mark.parametrize("text, reason", [
    ('/* { dg-options "-O2 -fwrapv" } */\nint main (void) { return 0; }\n', "dg-options"),
    ('/* { dg-additional-options "-fno-inline" } */\nint main () { return 0; }\n', "dg-options"),
    ("/* { dg-require-effective-target int128 } */\nint main () { return 0; }\n", "dg-require"),
    ('/* { dg-skip-if "ptxas" { nvptx-*-* } } */\nint main () { return 0; }\n', "dg-skip-if"),
    ('/* { dg-xfail-run-if "" { *-*-* } } */\nint main () { return 0; }\n', "dg-xfail"),
    ('#include "20040629-1.c"\n', "local-include"),
    ("int f (int x) { return x; }\n", "no-main"),
    ("/* { dg-do run } */\n/* { dg-prune-output \"x\" } */\n#include <stdlib.h>\nint\nmain ()\n{ exit (0); }\n", ""),
])
def test_torture_skip_reason(text, reason):
    assert torture.skip_reason(text) == reason


def _inserted(tmp_path, source: str, seeds=range(40)) -> list[str]:
    """The file rewritten with regions by each seed, at density 1."""
    out = []
    for seed in seeds:
        path = tmp_path / "t.c"
        path.write_text(source)
        regions.insert_locks(path, random.Random(seed), torture.PARSE_ARGS, torture.PRELUDE, density=1.0)
        out.append(path.read_text())
    return out


def test_regions_leave_a_statement_expression_alone(tmp_path):
    source = "int f (int a) {\n  int y = ({ int t = a; t += 1; t; });\n  return y;\n}\n"
    variants = _inserted(tmp_path, source)
    assert any("fz_m0" in v for v in variants)  # the function's own block does get regions
    for v in variants:
        inner = v[v.index("({"):v.index("})")]
        assert "pthread_mutex" not in inner, v


def test_regions_skip_a_function_with_computed_gotos(tmp_path):
    source = ("int f (int i) {\n  static void *t[] = { &&a, &&b };\n  int r = 0;\n  goto *t[i];\n"
              " a: r += 1;\n  r += 2;\n b: r += 4;\n  return r;\n}\n"
              "int g (int x) {\n  x += 1;\n  x *= 2;\n  return x;\n}\n")
    variants = _inserted(tmp_path, source)
    assert any("fz_m0" in v for v in variants)  # g gets regions
    for v in variants:
        f = v[v.index("int f ("):v.index("int g (")]
        assert "pthread_mutex" not in f and "FZ_LOCK" not in f, v


def test_regions_skip_statements_expanded_from_a_macro(tmp_path):
    source = ("#define BODY(n) int f##n (int x) { x += n; x *= 2; return x; }\nBODY(1)\n"
              "int g (int x) {\n  x += 1;\n  x *= 2;\n  return x;\n}\n")
    variants = _inserted(tmp_path, source)
    assert any("fz_m0" in v for v in variants)
    for v in variants:
        assert v.count("BODY(1)\n") == 1 and "#define BODY(n) int f##n (int x) { x += n; x *= 2; return x; }\n" in v, v


def test_regions_keep_extension_with_its_declaration(tmp_path):
    # libclang's extent of `__extension__ union {...} u = ...;` starts after __extension__
    source = ("double f (double x) {\n  __extension__ union { double d; int i[2]; } u = { .d = x };\n"
              "  return u.d;\n}\n")
    variants = _inserted(tmp_path, source)
    assert any("fz_m0" in v for v in variants)
    for v in variants:
        assert "__extension__ pthread" not in v and "__extension__ if" not in v and "__extension__ FZ" not in v, v


def test_regions_refuse_a_file_libclang_cannot_parse(tmp_path):
    path = tmp_path / "t.c"
    path.write_text("int main (void) { int nested (int x) { return x; } return nested (0); }\n")
    with pytest.raises(regions.ParseErrors):
        regions.insert_locks(path, random.Random(1), torture.PARSE_ARGS, torture.PRELUDE)
