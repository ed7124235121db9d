#!/bin/sh
# webtune's shard entrypoint, the one copy for every engine that starts shards: a Kubernetes
# Indexed Job (the image has it, deploy/kubernetes), a Slurm job (one srun step, or an
# array: deploy/slurm), pdsh, GNU parallel or ssh (docs/sharding.md).
#
#   entrypoint.sh shard   run this machine's shard of the test: it waits for START_AT,
#                         writes RESULTS_DIR/shard-I.json and exits with webtune's status
#   entrypoint.sh merge   merge RESULTS_DIR/shard-*.json into all.json and all.html; exit 2
#                         when they are not all the shards of one run, measured together;
#                         exit 99 when a THRESHOLDS expression fails
#
# Which shard, from the first of these that is set (I counts from 1 in --shard I/N):
#   SHARD_INDEX            0-based, given by hand (pdsh's %n, a shell loop)
#   JOB_COMPLETION_INDEX   0-based, set by Kubernetes in an Indexed Job's pods
#   SLURM_ARRAY_TASK_ID    an array task: --array=0-7 and --array=1-8 both count from
#                          SLURM_ARRAY_TASK_MIN (a range, with or without :STEP)
#   SLURM_PROCID           a task of one srun step (srun -n 8 entrypoint.sh shard)
# How many: SHARDS; under Slurm the array's or the step's task count (a SHARDS that
# disagrees with it is refused).
#
# Environment:
#   TARGET_URL   the URL to load (shard)
#   START_AT     the common start, required (shard): one absolute time for every shard,
#                RFC 3339 or Unix ms, far enough ahead for all of them to be waiting, e.g.
#                $(date -u -d '+2 minutes' +%Y-%m-%dT%H:%M:%SZ). A relative +DURATION is
#                refused here: each shard would count it from its own launch.
#   BENCH_ARGS   the whole test's flags, the same for every shard: "-c 3000 --rate 60000 -d 60s"
#   RUN_ID       the run's id, the same for every shard (webtune merge refuses shards of
#                different runs); default: slurm-JOBID under Slurm (the array's job id),
#                else webtune derives it from START_AT and the test's flags
#   THRESHOLDS   ';'-separated threshold expressions, checked on the merged result (merge)
#   MERGE_ARGS   more flags for webtune merge, e.g. --allow-skew (merge)
#   RESULTS_DIR  where results go (default /results); one directory per run
#   WEBTUNE      the webtune binary (default: webtune on PATH)
set -eu

mode=${1:-shard}
results=${RESULTS_DIR:-/results}
webtune=${WEBTUNE:-webtune}

die() {
    echo "entrypoint.sh: $*" >&2
    exit 2
}

# Is every argument a number 0, 1, 2, …?
numbers() {
    for n in "$@"; do
        case $n in
        '' | *[!0-9]*) return 1 ;;
        esac
    done
}

case "$mode" in
shard)
    run=${RUN_ID:-}
    from_slurm=
    if [ -n "${SHARD_INDEX:-}" ]; then
        index=$SHARD_INDEX
        count=${SHARDS:-}
    elif [ -n "${JOB_COMPLETION_INDEX:-}" ]; then
        index=$JOB_COMPLETION_INDEX
        count=${SHARDS:-}
    elif [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
        id=$SLURM_ARRAY_TASK_ID
        min=${SLURM_ARRAY_TASK_MIN:-}
        max=${SLURM_ARRAY_TASK_MAX:-}
        step=${SLURM_ARRAY_TASK_STEP:-1}
        count=${SLURM_ARRAY_TASK_COUNT:-}
        numbers "$id" "$min" "$max" "$step" "$count" && [ "$step" -gt 0 ] ||
            die "SLURM_ARRAY_TASK_ID, _MIN, _MAX, _STEP and _COUNT must be set by Slurm"
        # A range MIN-MAX[:STEP] has COUNT tasks; a list (--array=0,2,5) cannot be numbered.
        [ $(((max - min) / step + 1)) -eq "$count" ] && [ $(((id - min) % step)) -eq 0 ] ||
            die "the array must be a range (--array=0-$((count - 1)) or --array=1-$count), not a list"
        index=$(((id - min) / step))
        run=${run:-slurm-${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}}
        from_slurm="the array's $count tasks"
    elif [ -n "${SLURM_PROCID:-}" ] && [ -n "${SLURM_STEP_ID:-}" ]; then
        index=$SLURM_PROCID
        count=${SLURM_STEP_NUM_TASKS:-${SLURM_NTASKS:-}}
        run=${run:-slurm-$SLURM_JOB_ID}
        from_slurm="the step's $count tasks"
    elif [ -n "${SLURM_JOB_ID:-}" ]; then
        die "in a Slurm job, run the shards as one step (srun entrypoint.sh shard) or as an array (sbatch --array)"
    else
        die "set SHARD_INDEX (0-based), or run in a Kubernetes Indexed Job, a Slurm array or an srun step"
    fi
    if [ -n "$from_slurm" ] && [ -n "${SHARDS:-}" ] && [ "$SHARDS" != "$count" ]; then
        die "SHARDS=$SHARDS, but Slurm runs $from_slurm: leave SHARDS unset or make them agree"
    fi
    numbers "$index" "$count" && [ "$count" -gt 0 ] ||
        die "SHARDS must be set to the number of shards (and the index be a number)"
    [ "$index" -lt "$count" ] || die "shard index $index is not below SHARDS=$count (indices count from 0)"
    [ -n "${TARGET_URL:-}" ] || die "set TARGET_URL, the URL to load"
    case ${START_AT:-} in
    '' | SET-ME*)
        die "set START_AT to one start time for every shard, e.g. START_AT=$(date -u -d '+2 minutes' +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo 2026-12-01T10:00:00Z)"
        ;;
    +*)
        die "START_AT=$START_AT counts from each shard's own launch: give one absolute time for every shard (RFC 3339 or Unix ms)"
        ;;
    esac
    shard=$((index + 1))
    mkdir -p "$results"
    set -- --shard "$shard/$count" --start-at "$START_AT"
    if [ -n "$run" ]; then
        set -- "$@" --run-id "$run"
    fi
    # BENCH_ARGS is split into words on purpose: it holds several flags.
    # shellcheck disable=SC2086
    exec "$webtune" bench "$TARGET_URL" ${BENCH_ARGS:-} "$@" \
        --quiet --json "$results/shard-$shard.json"
    ;;
merge)
    set --
    if [ -n "${THRESHOLDS:-}" ]; then
        old_ifs=$IFS
        IFS=';'
        for t in $THRESHOLDS; do
            set -- "$@" --threshold "$t"
        done
        IFS=$old_ifs
    fi
    for f in "$results"/shard-*.json; do
        [ -e "$f" ] || die "no shard results (shard-*.json) in $results"
        break
    done
    # MERGE_ARGS is split into words on purpose, as BENCH_ARGS.
    # shellcheck disable=SC2086
    exec "$webtune" merge "$results"/shard-*.json \
        --json "$results/all.json" --html "$results/all.html" ${MERGE_ARGS:-} "$@"
    ;;
*)
    die "unknown mode $mode (use shard or merge)"
    ;;
esac
