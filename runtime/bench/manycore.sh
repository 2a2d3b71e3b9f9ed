#!/bin/bash
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
# 1, 2, 4, 8 and 15 client threads (15: a 16-core machine less the RCL server's core); then,
# when built with MEMCACHED=... ORIGINAL=... (below), memcached's set and get throughput.
# Settings (environment):
#   OUT      output directory (default ./manycore-out)
#   THREADS  client thread counts (default: those of 1,2,4,8,15 up to max(CPUs - 1, 2))
#   BUDGET   seconds for all lockbench throughput measurements together (default 240; 180 when the
#            memcached part runs)
#   REPEAT   paired rounds per point (default 3)
#   LIMIT    seconds after which lockbench is stopped, whatever it measured (default 450)
#   TOTAL    seconds from the start after which the memcached part starts no more runs (default 460)
#   BIN_DIR  where `build` puts lockbench and `run` finds it (default runtime/build/manycore)
#   MC_THREADS  memcached's part: server threads = memcslap clients (default: those of 1,2,4,8 up to
#            CPUs / 2, at least 1); MC_OPS operations per client (20000); MC_ROUNDS rounds (3); MC=0: skip
#
# memcached (the paper's Get/Set figure): `MEMCACHED=path/to/transformed/memcached ORIGINAL=path/to/
# original/memcached manycore.sh build` also copies both binaries, memcslap (the load generator) and
# the shared libraries they use but the C library's into $BIN_DIR/memcached/ (run with them on
# LD_LIBRARY_PATH: a machine with an older C library than this one's may refuse them).  `run` then
# measures set and get throughput, each server started fresh on 127.0.0.1: the original, and the
# transformed one under posix, rcl, the best combining lock and the best queue lock of the lockbench
# ranking just measured (5 lines, the most threads), in rounds that alternate the configurations.
# Written: $OUT/memcached.csv (workload, threads, config, locks, round, ops_per_s) and, with the
# report, memcached.png and the medians in ranking.txt.
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
    if [ -n "${MEMCACHED:-}" ]; then
        mc=$BIN_DIR/memcached
        mkdir -p "$mc/lib"
        cp "$MEMCACHED" "$mc/memcached.transformed"
        cp "${ORIGINAL:?ORIGINAL=path of the original memcached binary}" "$mc/memcached.original"
        cp "$(command -v memcslap || command -v memslap)" "$mc/memcslap"
        for bin in "$mc"/memcached.transformed "$mc"/memcached.original "$mc"/memcslap; do
            ldd "$bin" | awk '/=> \// { print $3 }' | grep -v -E '/(libc|libm|libpthread|libdl|librt)\.so' |
                while read -r lib; do cp -L "$lib" "$mc/lib/"; done
        done
        echo "memcached: $(ls "$mc" | tr '\n' ' ')libs: $(ls "$mc/lib" | tr '\n' ' ')"
    fi
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
    if [ -x "$BIN_DIR/memcached/memcslap" ] && [ "${MC:-1}" != 0 ]; then BUDGET=${BUDGET:-180}; fi
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
    if [ -x "$BIN_DIR/memcached/memcslap" ] && [ "${MC:-1}" != 0 ]; then
        memcached_part "$cpus"
        echo "manycore.sh: memcached done at $(( $(date +%s) - started ))s"
    fi
    if command -v python3 >/dev/null 2>&1; then
        PYTHONPATH="$runtime/..${PYTHONPATH:+:$PYTHONPATH}" python3 "$here/manycore_report.py" "$OUT" ||
            echo "manycore.sh: the report failed; the CSVs are written: run manycore_report.py on them elsewhere" >&2
    else
        echo "manycore.sh: no python3 here: run runtime/bench/manycore_report.py $OUT where there is one"
    fi
    echo "manycore.sh: done in $(( $(date +%s) - started ))s; results in $OUT"
}

best_of() {  # the series of lockbench.csv's algorithms in $2 ranked highest at 5 lines, the most threads
    awk -F, -v want="$2" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { rows[NR] = $0; if ($col["threads"] > top) top = $col["threads"] }
        END { n = split(want, names, " "); for (i = 1; i <= n; i++) ok[names[i]] = 1
              for (r in rows) { split(rows[r], f, ",")
                  if (f[col["threads"]] == top && f[col["lines"]] == 5 && f[col["form"]] == "execute" &&
                      (f[col["algorithm"]] in ok) && (best == "" || f[col["ratio_to_posix"]] + 0 > ratio)) {
                      best = f[col["algorithm"]]; ratio = f[col["ratio_to_posix"]] + 0 } }
              print best }' "$1"
}

mc_once() {  # mc_once BINARY LOCKS THREADS WORKLOAD: ops/s of one memcslap run on a fresh server
    local port=$((20000 + RANDOM % 20000)) pid out secs
    RCLIFY_LOCKS=$2 "$1" -l 127.0.0.1 -p "$port" -U 0 -t "$3" -m 512 -c 1024 -u root >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 250); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.02; done
    out=$(timeout 120 "$BIN_DIR/memcached/memcslap" --servers="127.0.0.1:$port" --test="$4" \
          --concurrency="$3" --execute-number="${MC_OPS:-20000}" 2>&1) || true
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    secs=$(echo "$out" | sed -n "s/.*Time to $4 *[0-9]* keys by *[0-9]* threads: *\([0-9.]*\) seconds.*/\1/p")
    [ -n "$secs" ] && awk -v n="$(( $3 * ${MC_OPS:-20000} ))" -v s="$secs" 'BEGIN { if (s > 0) printf "%.0f", n / s }'
}

memcached_part() {
    local cpus=$1 half=$(( $1 / 2 )) list="" combining queue
    [ "$half" -lt 1 ] && half=1
    for t in 1 2 4 8; do [ "$t" -le "$half" ] && list="$list $t"; done
    list=${MC_THREADS:-$list}
    combining=$(best_of "$OUT/lockbench.csv" "$(awk -F, 'NR > 1 && $2 == 1 { printf "%s ", $1 }' "$OUT/memory.csv")")
    queue=$(best_of "$OUT/lockbench.csv" "mcs clh ticket mcstp ttas")
    export LD_LIBRARY_PATH="$BIN_DIR/memcached/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    local configs=("original|" "posix|*=posix" "rcl|*=rcl" "${combining:-ccsynch}|*=${combining:-ccsynch}"
                   "${queue:-mcs}|*=${queue:-mcs}")
    echo "memcached: threads$list, configs original posix rcl ${combining:-ccsynch} ${queue:-mcs}"
    echo "workload,threads,config,locks,round,ops_per_s" > "$OUT/memcached.csv"
    for t in ${list//,/ }; do
        for workload in set get; do
            for round in $(seq "${MC_ROUNDS:-3}"); do
                local n=${#configs[@]} k
                if [ $(( $(date +%s) - started )) -ge "${TOTAL:-460}" ]; then
                    echo "memcached: stopped at TOTAL=${TOTAL:-460}s before $workload, $t threads, round $round"
                    return 0
                fi
                for ((k = 0; k < n; k++)); do
                    local c=${configs[$(( (k + round) % n ))]} name locks bin ops
                    name=${c%%|*}; locks=${c#*|}
                    bin=$BIN_DIR/memcached/memcached.transformed
                    [ "$name" = original ] && bin=$BIN_DIR/memcached/memcached.original
                    ops=$(mc_once "$bin" "${locks:-*=posix}" "$t" "$workload")
                    echo "$workload,$t,$name,$locks,$round,${ops:-}" >> "$OUT/memcached.csv"
                done
            done
        done
    done
}

case "${1:-}" in
    build) build ;;
    run) run ;;
    *) echo "usage: $0 build | run   (see the comment at the top)" >&2; exit 2 ;;
esac
