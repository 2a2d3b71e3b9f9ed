"""The differential fuzzer's fixed-seed campaign (docs/fuzzing.md): generated programs (rclify's own
generator and Csmith with lock regions inserted), transformed in batches, each run original against
transformed under posix, rcl, ccsynch, mcs and fc, every feature generated (tests/fuzz/__main__.py:
FIXED_DISABLED lists the features of known, unfixed bugs: none); `python -m tests.fuzz --hours 2` runs longer."""

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
