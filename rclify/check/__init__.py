"""`rclify check`: build a tree with its own build system against the runtime, run its test suite
once per lock assignment.  plan.py says how, run.py runs it, results.py reads what it gave."""

from rclify.check.plan import (CONFIG_FILE, Plan, automake_runs_no_test, detect, make_plan, read_config, require_tools,
                               write_config)
from rclify.check.results import (Counts, Report, RunResult, format_table, missing_tool, parse_counts, prove_failures,
                                  runtime_not_linked)
from rclify.check.run import DEFAULT_LOCKS, DEFAULT_TIMEOUT, STATE_DIR, run_check, run_logged, runtime_fingerprint
from rclify.lock_config import NO_OVERRIDE, validate_override

__all__ = [
    "CONFIG_FILE", "Counts", "DEFAULT_LOCKS", "DEFAULT_TIMEOUT", "NO_OVERRIDE", "Plan", "Report", "RunResult",
    "STATE_DIR", "automake_runs_no_test", "detect", "format_table", "make_plan", "missing_tool", "parse_counts", "prove_failures",
    "read_config", "require_tools", "run_check", "run_logged", "runtime_fingerprint", "runtime_not_linked", "validate_override",
    "write_config",
]
