"""rclify transform: extract critical sections and move a tree's locks onto the runtime."""

import os
from pathlib import Path

from rclify.commands import positive_int
from rclify.transform import transform_tree


def add_parser(sub):
    p = sub.add_parser(
        "transform",
        help="extract every lock..unlock region and rewrite the locks to the rclify runtime",
        description="Transforms a C source tree in place (default) or into --output. "
        "Arguments after `--` are compiler flags for the analysis (-I, -D).  On a tree it has transformed, "
        "transforms again what was added or changed since (docs/transform.md, Re-running transform).",
    )
    p.add_argument("src", type=Path, help="source tree")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--output", "-o", type=Path, help="write the transformed tree here instead")
    where.add_argument("--in-place", action="store_true", help="transform SRC itself (the default)")
    p.add_argument("--config", type=Path, help="lock_config.h to write (default: SRC/lock_config.h)")
    p.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    p.add_argument("--check", action="store_true",
                   help="as --dry-run, and exit 1 when the transform would change the tree (0 when not), "
                        "as black --check does")
    p.add_argument("--configure", action="store_true",
                   help="with --dry-run or --check: run the tree's CMake, Meson, configure or make (in a scratch "
                        "copy) to learn its build flags, as a transform does; without it a dry run guesses them")
    p.add_argument("--report", type=Path, help="write a JSON report of every region and lock")
    p.add_argument("-j", "--jobs", type=positive_int, default=os.cpu_count() or 1, help="parallel jobs (at least 1)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.add_argument("-p", dest="database", type=Path, metavar="DIR",
                   help="directory of the build's compile_commands.json (default: the tree's root or "
                        "build/, else CMake or ./configure run in a scratch copy, else a guess)")
    p.add_argument("--exclude", action="append", default=[], metavar="PATH",
                   help="leave this directory or file alone (relative to SRC; repeatable; also `exclude = [...]` "
                        "in the [transform] table of SRC/rclify.toml): not analysed, not rewritten, its lock calls "
                        "reported as left alone")
    p.add_argument("--include-vendored", action="store_true",
                   help="transform vendored directories too (deps/*, third_party/*, vendor/*, 3rdparty/*, git "
                        "submodules, nested projects with their own build and licence), which are left alone by "
                        "default")
    return p


def run(args) -> int:
    options = transform_tree.Options(
        src=args.src, output=args.output, config=args.config, dry_run=args.dry_run or args.check,
        report=args.report, jobs=args.jobs, cflags=args.passthrough, quiet=args.quiet,
        database=args.database, configure=args.configure,
        exclude=[os.path.relpath(e, args.src.resolve()) if os.path.isabs(e) else e for e in args.exclude],  # as in rclify.toml
        include_vendored=args.include_vendored,
    )
    outcome = transform_tree.run(options)
    if outcome.already_transformed:
        print(f"{outcome.root}: already transformed, and no C file changed since: nothing changed")
        return 0
    args.dry_run = args.dry_run or args.check
    s = outcome.summary()
    hybrid = ", ".join(f"{reason} {n}" for reason, n in s["hybrid"].items()) or "none"
    verb = "would change" if args.dry_run else "changed"
    files = f"{verb} {s['files_changed']}"
    if outcome.rerun is not None:  # on a transformed tree: the files written now are fewer
        verb = "would update" if args.dry_run else "updated"
        files = f"{s['files_changed']} transformed, {verb} {len(outcome.rerun['updated'])} now"
    print(f"rclify transform: {s['files']} files, {files}; "
          f"{s['regions']} regions: {s['extracted']} extracted, {s['delegable']} delegable "
          f"({s['extracted_thread_bound']} kept on their caller's thread: thread-bound state not ruled out), "
          f"{s['regions'] - s['extracted']} hybrid "
          f"({hybrid}); {s['locks']} locks")
    if outcome.rerun is not None:
        print(f"  {verb}: {', '.join(outcome.rerun['updated']) or 'none'}; edited since the transform, "
              f"edits carried into the originals: {', '.join(outcome.rerun['edits_carried']) or 'none'}")
    if outcome.build_flags:  # which way the flags were found: a database, a dry run, a scratch build, a guess
        print(f"  build flags: {outcome.build_flags}")
    cs = s["call_sites"]
    alone = ", ".join(f"{reason} {n}" for reason, n in cs["left_alone"].items())
    print(f"  lock call sites: {cs['found']} seen: {cs['in_extracted_regions']} in extracted regions, "
          f"{cs['in_hybrid_regions']} in hybrid regions, {sum(cs['left_alone'].values())} left alone"
          + (f" ({alone})" if alone else ""))
    if s["wrappers"]:
        print(f"  lock wrappers: {', '.join(s['wrappers'])}")
    for rel, error in sorted(outcome.failures.items()):
        print(f"  warning: spatch could not parse all of {rel}: {error}")
    for rel, error in sorted(outcome.unchanged.items()):
        print(f"  left unchanged: {rel}: {error}")
    for path, why in sorted(outcome.excluded.items()):
        print(f"  left alone: {path} ({why})")
    not_handled = ", ".join(f"{api}_* {n} call site{'s' if n != 1 else ''}" for api, n in s["not_handled"].items() if n)
    if not_handled:
        print(f"  not handled (left as pthread calls, no lock_config.h entry): {not_handled}")
        for site in outcome.not_handled:
            where = f" in {site['function']}()" if site["function"] else ""
            print(f"    {site['file']}:{site['line']}{where}: {site['text']}")
    if outcome.rwlock_calls:
        n = len(outcome.rwlock_calls)
        print(f"  rwlocks: {n} pthread_rwlock_* call site{'s' if n != 1 else ''} now rcl_rwlock_* (hybrid: "
              f"sections on rwlocks are not extracted yet; each rwlock has its lock_config.h entry)")
    for k in outcome.kept_posix:
        what = "pthread_mutex_t (its regions hybrid: lock-kept-posix)" if k["kind"] == "mutex" else "pthread_cond_t"
        print(f"  kept a {what}: {k['name']}{' (a struct field)' if k['field'] else ''}: {'; '.join(k['because'])}")
    if outcome.unused_overrides:
        print(f"  warning: lock_config.h overrides sections that do not exist: {', '.join(outcome.unused_overrides)}")
    for note in outcome.helper_calls_unwrapped:
        print(f"  warning: {note}")
    if outcome.unverified:
        print(f"  warning: {len(outcome.unverified)} changed files did not compile before the transform either, with "
              f"the flags found (give the build's with -p DIR or after --): the compile check found no new error in "
              f"them, which proves less: {', '.join(sorted(outcome.unverified)[:5])}"
              + (" ..." if len(outcome.unverified) > 5 else ""))
    for error in outcome.api_errors:
        print(f"  not rewritten (no runtime equivalent): {error}")
    for record in outcome.regions:
        if record.why_hybrid is not None:
            what = record.why_hybrid.unrecognized  # an unrecognised shape says what it was
            print(f"  hybrid: {record.file}:{record.line} in {record.function}(): "
                  f"{record.why_hybrid.reason} (line {record.why_hybrid.reason_line}{': ' + what if what else ''})")
    if args.check:  # 1: the transform would change the tree
        return int(bool(outcome.rerun["updated"] if outcome.rerun is not None else s["files_changed"]))
    return 0
