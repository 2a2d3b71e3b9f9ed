"""Why a critical region is left hybrid (lock/unlock calls, correct on every algorithm).

Every reason rclify gives is a member of Reason, defined here with the sentence the report
prints; the analysis (region_walk.py, region_checks.py), the planning (plan.py), the C++ listing (cxx.py) and the compile
check (compile_check.py) name these members, never a bare string.  Each reason has a fixture in
tests/fixtures/refusals/<reason>/ and tests/test_refusals.py fails for one that has none.
"""

from enum import StrEnum


class Reason(StrEnum):
    LOCK_UNLOCK_IN_DIFFERENT_FUNCTIONS = "lock-unlock-in-different-functions"
    UNBALANCED_REGION = "unbalanced-region"
    HAND_OVER_HAND = "hand-over-hand"
    RETURN_WHILE_LOCKED = "return-while-locked"
    JUMP_OUT_WHILE_LOCKED = "jump-out-while-locked"
    JUMP_IN_TAIL = "jump-in-tail"
    RELOCK_WHILE_HELD = "relock-while-held"
    SETJMP = "setjmp"
    VA_LIST = "va_list"
    COMPUTED_GOTO = "computed-goto"
    LABEL_TARGETED_FROM_OUTSIDE = "label-targeted-from-outside"
    LABEL_IN_REGION = "label-in-region"
    UNRECOGNIZED_LOCK_SHAPE = "unrecognized-lock-shape"
    PARSE_ERRORS = "parse-errors"
    MACRO_USES_LOCAL = "macro-uses-local"
    CONDITIONAL_DECLARATION = "conditional-declaration"
    GENERATED_CODE_DOES_NOT_COMPILE = "generated-code-does-not-compile"
    SHADOWED_VARIABLE = "shadowed-variable"
    LOCAL_TYPE = "local-type"
    VARIABLE_LENGTH_ARRAY = "variable-length-array"
    HOIST_NOT_SIMPLE = "hoist-not-simple"
    PREPROCESSOR_CONDITIONAL = "preprocessor-conditional"
    TRYLOCK = "trylock"
    NOT_BUILT = "not-built"
    CXX_SOURCE = "c++-source"
    FILE_LEFT_UNCHANGED = "file-left-unchanged"
    TIMEDLOCK = "timedlock"
    LOCK_KEPT_POSIX = "lock-kept-posix"
    SECTION_IN_MACRO = "section-in-macro"
    IN_HEADER = "in-header"
    CLEANUP_GUARD = "cleanup-guard"
    EXIT_IN_NESTED_SECTION = "exit-in-nested-section"
    LOCAL_ACROSS_WINDOW = "local-across-window"
    CANCELLATION_CLEANUP = "cancellation-cleanup"
    ALLOCA = "alloca"
    FRAME_ADDRESS = "frame-address"
    UNLOCK_SIDE_EFFECT = "unlock-side-effect"
    LOCK_UNDER_CONDITION = "lock-under-condition"
    COMPOUND_LITERAL_OUTLIVES_SECTION = "compound-literal-outlives-section"
    CLEANUP_LOCAL = "cleanup-local"
    MACRO_SPELLS_LOCAL = "macro-spells-local"


WHY = {
    Reason.LOCK_UNLOCK_IN_DIFFERENT_FUNCTIONS: "the lock is not released in the function that takes it",
    Reason.UNBALANCED_REGION: "some paths release the lock and others do not at the same point",
    Reason.CANCELLATION_CLEANUP: "inside pthread_cleanup_push(unlock, the lock): a thread cancelled in the section must "
                                 "be cancelled where it waits, on its own thread, holding the lock its handler "
                                 "releases: run in hybrid mode",
    Reason.HAND_OVER_HAND: "another lock is taken inside and released outside (or the reverse)",
    Reason.RETURN_WHILE_LOCKED: "a return leaves the function with the lock held",
    Reason.JUMP_OUT_WHILE_LOCKED: "a break, continue or goto leaves the region with the lock held",
    Reason.JUMP_IN_TAIL: "code after an early unlock jumps back into the region's constructs",
    Reason.RELOCK_WHILE_HELD: "the lock is taken again while held",
    Reason.SETJMP: "setjmp/longjmp inside the region",
    Reason.VA_LIST: "va_list use inside the region",
    Reason.COMPUTED_GOTO: "computed goto inside the region",
    Reason.LABEL_TARGETED_FROM_OUTSIDE: "a label inside the region is the target of a goto from outside",
    Reason.LABEL_IN_REGION: "a case label inside the region",
    Reason.UNRECOGNIZED_LOCK_SHAPE: "a lock call inside the region in a form rclify does not recognise",
    Reason.PARSE_ERRORS: "libclang found errors in the function (at the reason's line) with the flags rclify found: "
                         "a header or macro its build provides is missing (give the build's flags with -p DIR or "
                         "after --; spatch's parse errors are other warnings)",
    Reason.MACRO_USES_LOCAL: "a macro used in the region names a local variable of the caller (not visible in the region's text)",
    Reason.CONDITIONAL_DECLARATION: "a variable the region uses is declared in more than one #if branch (its type depends on the configuration)",
    Reason.GENERATED_CODE_DOES_NOT_COMPILE: "the extracted code did not compile; the file keeps lock/unlock calls",
    Reason.SHADOWED_VARIABLE: "a variable declared in the region shadows one the region uses",
    Reason.LOCAL_TYPE: "the region uses a variable whose type is declared inside the function",
    Reason.VARIABLE_LENGTH_ARRAY: "the region uses a variable-length array",
    Reason.HOIST_NOT_SIMPLE: "a variable declared in the region and used after it has a declaration that cannot be split",
    Reason.PREPROCESSOR_CONDITIONAL: "an #if/#endif pair is split by the region's boundaries",
    Reason.TRYLOCK: "trylock regions are run in hybrid mode",
    Reason.NOT_BUILT: "the file is not compiled by this build (not in its compile database; a header: no C file it lists includes it): its locks are rewritten, nothing is extracted that no compile check could verify",
    Reason.CXX_SOURCE: "the region is in a C++ file: rclify extracts C only; its lock calls run in hybrid mode",
    Reason.FILE_LEFT_UNCHANGED: "the file was left as it was (see files_left_unchanged) so that every file that "
                                "compiled still does: its lock calls stay pthread calls",
    Reason.TIMEDLOCK: "a lock taken with a deadline (pthread_mutex_timedlock/clocklock, which may time out) "
                      "stays a call (rcl_mutex_timedlock/clocklock): run in hybrid mode",
    Reason.LOCK_KEPT_POSIX: "the program calls pthread_mutex_consistent, _getprioceiling or _setprioceiling on the "
                            "lock and reads what its lock calls return (EOWNERDEAD): it stays a pthread mutex "
                            "(report: locks_kept_posix) or, where it cannot be kept apart, an rcl_mutex_t whose calls "
                            "stay calls (rcl_mutex_consistent runs on its pthread mutex)",
    Reason.SECTION_IN_MACRO: "the section is inside a statement macro's invocation (WITH_LOCK(m, x++), "
                             "STAT_INCR(ctx, n, 1)) whose expansion rclify does not read for sure: defined under "
                             "#if, more or other lock operations than one lock and one unlock, or a jump, label, "
                             "declaration or early unlock in its section (macro_sections.py)",
    Reason.IN_HEADER: "the region is in a function of a header that cannot take generated code safely: the header "
                      "has no include guard, or the lock is taken through a wrapper function of a C file",
    Reason.CLEANUP_GUARD: "a __attribute__((cleanup)) lock guard whose variable the section uses, whose cleanup "
                          "function does work before unlocking, or whose function's return type has no name: the "
                          "guard stays, run in hybrid mode",
    Reason.EXIT_IN_NESTED_SECTION: "a jump that ends the section (a continue of a scoped lock statement, a return, "
                                   "break or goto out of a lock guard's block) lies inside a section nested in it",
    Reason.LOCAL_ACROSS_WINDOW: "a variable declared inside the region is used after a point where the region "
                                "unlocks and relocks in its middle (a window): the section returns to the caller "
                                "there, and the variable would not survive until it resumes",
    Reason.ALLOCA: "alloca (or __builtin_alloca*) inside the section: its memory belongs to the frame of the "
                   "function that calls it, which would be the section's (freed when it returns, and on an RCL "
                   "server's stack), not the caller's",
    Reason.FRAME_ADDRESS: "__builtin_frame_address, __builtin_return_address or a stack save inside the section: "
                          "they name the frame they run in, which would be the section's",
    Reason.UNLOCK_SIDE_EFFECT: "the unlock's argument has a side effect on something other than a local only this "
                               "function can see (`unlock(&locks[next++])` on a global or a local whose address is "
                               "taken): it would run after the lock is released",
    Reason.LOCK_UNDER_CONDITION: "the lock is taken and released under a condition (`if (c) lock; ... if (c) "
                                 "unlock;`) that the section may change (c calls a function or writes, the section "
                                 "writes, declares or takes the address of what c reads, or waits on a condvar), or "
                                 "around an exit or an unlock of its own: the call site would decide once what the "
                                 "original decides twice",
    Reason.COMPOUND_LITERAL_OUTLIVES_SECTION: "a compound literal created in the section whose address may be used "
                                              "after it (`keep = &(struct rec){ ... };`, its block goes on after "
                                              "the unlock): its storage would be the section's frame, gone when "
                                              "the section returns",
    Reason.CLEANUP_LOCAL: "a __attribute__((cleanup)) local of the section whose block is left after an early "
                          "unlock, a window or a run of the section's loop, or declared after such a point: its "
                          "cleanup would run under the lock, before the unlock, or on a variable never set",
    Reason.MACRO_SPELLS_LOCAL: "a local of the caller is passed to a macro that hands it on to another macro "
                               "that stringizes (#) or pastes (##) it (`#define SHOW(x) SHOW_(x, 1)`), or is also "
                               "a member or label name in the section: reached through the context, its spelling "
                               "would change",
}

REASONS = {reason.value: WHY[reason] for reason in Reason}  # key -> sentence, as the report shows


class Refusal(Exception):
    """Planning found a reason the region cannot be extracted."""

    def __init__(self, reason: Reason):
        super().__init__(reason.value)
        self.reason = Reason(reason)
