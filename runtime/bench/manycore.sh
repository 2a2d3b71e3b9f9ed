#!/bin/sh
# manycore.sh: the lock figures of a many-core machine, in one call of at most 8 minutes, with no
# network and nothing installed there (docs/benchmarks.md, "Many-core run").
#
#   runtime/bench/manycore.sh build      here: lockbench, statically linked, into $BIN_DIR
#                                        (runtime/build/manycore/, ignored by git: carry it)
#   runtime/bench/manycore.sh run        there (or here, scaled down): writes under $OUT
#       $OUT/lockbench.csv   one row per series and point (rclify bench's columns)
#       $OUT/memory.csv      bytes per lock
#       $OUT/roundtrip.csv   the cache-line ping-pong floor and the RCL round trip
#       $OUT/lockbench.json  everything lockbench measured, $OUT/lockbench.log its progress
#       $OUT/ranking.txt, $OUT/*.png   from manycore_report.py, when python3 (and matplotlib,
#                                      for the PNGs) are there; else run it afterwards on the CSVs
#
# What it measures: the RCL round trip against the cache-line floor (paired, as rclify bench
# does), then every registered algorithm (extracted form, and the lock form where it differs)
# against posix at the highest contention (delay 0) with 1 and 5 shared lines per section, at
# 1, 2, 4, 8 and 15 client threads (15: a 16-core machine less the RCL server's core).
# Settings (environment):
#   OUT      output directory (default ./manycore-out)
#   THREADS  client thread counts (default: those of 1,2,4,8,15 up to max(CPUs - 1, 2))
#   BUDGET   seconds for all throughput measurements together (default 240)
#   REPEAT   paired rounds per point (default 3)
#   LIMIT    seconds after which lockbench is stopped, whatever it measured (default 450)
#   BIN_DIR  where `build` puts lockbench and `run` finds it (default runtime/build/manycore)
# The memcached part of issue 26 (Get/Set at rising client counts) is not in this script.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
runtime=$(cd "$here/.." && pwd)
BIN_DIR=${BIN_DIR:-$runtime/build/manycore}
LOCKBENCH=$BIN_DIR/bench/lockbench

build() {
    # a build directory of its own: the static binary never mixes with the dynamic one
    make -s -C "$runtime" BUILD="$BIN_DIR" CC="${CC:-gcc} -static" "$LOCKBENCH"
    file "$LOCKBENCH" 2>/dev/null | grep -q "statically linked" || {
        echo "manycore.sh: $LOCKBENCH is not statically linked" >&2; exit 1; }
    echo "built $LOCKBENCH (static); carry $(realpath --relative-to="$runtime/.." "$BIN_DIR" 2>/dev/null || echo "$BIN_DIR")"
}

default_threads() {
    cpus=$1
    top=$((cpus - 1))
    [ "$top" -lt 2 ] && top=2
    list=""
    for t in 1 2 4 8 15; do
        [ "$t" -le "$top" ] && list="$list${list:+,}$t"
    done
    echo "$list"
}

json_field() {  # the number after "KEY": in lockbench's JSON
    grep -o "\"$1\": [0-9.e+-]*" "$2" | head -1 | sed 's/.*: //'
}

run() {
    [ -x "$LOCKBENCH" ] || { echo "manycore.sh: no $LOCKBENCH: run '$0 build' first (and carry $BIN_DIR)" >&2; exit 2; }
    OUT=${OUT:-./manycore-out}
    mkdir -p "$OUT"
    cpus=$(nproc)
    threads=${THREADS:-$(default_threads "$cpus")}
    started=$(date +%s)
    echo "manycore.sh: $cpus CPUs ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), threads $threads," \
         "budget ${BUDGET:-240}s, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/machine.txt"
    # one lockbench run: the floor and RCL round trip first, then the ranking grid
    timeout "${LIMIT:-450}" "$LOCKBENCH" --threads "$threads" --delays 0 --lines 1,5 --ctx none --nested none \
        --budget "${BUDGET:-240}" --repeat "${REPEAT:-3}" \
        --csv "$OUT/lockbench.csv" --memory-csv "$OUT/memory.csv" --json \
        > "$OUT/lockbench.json" 2> "$OUT/lockbench.log" || {
        status=$?; tail -5 "$OUT/lockbench.log" >&2
        echo "manycore.sh: lockbench ended with status $status (124: stopped at LIMIT)" >&2; exit "$status"; }
    j=$OUT/lockbench.json
    {
        echo "cpus,server_cpu,pingpong_roundtrip_ns,pingpong_roundtrip_best_ns,rcl_roundtrip_ns,rcl_roundtrip_best_ns,rcl_roundtrip_vs_floor,cross_core_pairs,rcl_roundtrip_vs_floor_cross_core,posix_uncontended_ns"
        echo "$(json_field cpus "$j"),$(json_field server_cpu "$j"),$(json_field pingpong_roundtrip_ns "$j"),$(json_field pingpong_roundtrip_best_ns "$j"),$(json_field rcl_roundtrip_ns "$j"),$(json_field rcl_roundtrip_best_ns "$j"),$(json_field rcl_roundtrip_vs_floor "$j"),$(json_field cross_core_pairs "$j"),$(json_field rcl_roundtrip_vs_floor_cross_core "$j"),$(json_field posix_uncontended_ns "$j")"
    } > "$OUT/roundtrip.csv"
    echo "manycore.sh: lockbench done in $(( $(date +%s) - started ))s"
    cat "$OUT/roundtrip.csv"
    if command -v python3 >/dev/null 2>&1; then
        PYTHONPATH="$runtime/..${PYTHONPATH:+:$PYTHONPATH}" python3 "$here/manycore_report.py" "$OUT" ||
            echo "manycore.sh: the report failed; the CSVs are written: run manycore_report.py on them elsewhere" >&2
    else
        echo "manycore.sh: no python3 here: run runtime/bench/manycore_report.py $OUT where there is one"
    fi
    echo "manycore.sh: done in $(( $(date +%s) - started ))s; results in $OUT"
}

case "${1:-}" in
    build) build ;;
    run) run ;;
    *) echo "usage: $0 build | run   (see the comment at the top)" >&2; exit 2 ;;
esac
