# What the device scripts (device_s2v.sh, device_namesake.sh) share; each sources
# it from the repository root at its start, with OUT set (and CARRY, WORK if given; DEADLINE before a
# helper runs). Sourcing it sets START (now), PY (default python3) and DRY (default 0), and:
#
#   elapsed, left, within S   seconds since START; seconds until DEADLINE (at least 5); S cut to what is left
#   banner NAME               the first lines of a run: time, DRY, deadline, commit, GPU, torch, CPUs
#   unxz FILE                 xz -dc, or Python's lzma where xz is missing
#   unpack_books_carry        $CARRY's books (scripts/device_s2v_prepare.sh) into $WORK/data, the data root
#   log_tails N FILE...       the last N lines of each log, each line cut to 300 characters
#   run_folders FOLDER...     LOGS=$OUT/logs, FAILED="" (the parts that failed), the folders made
#   summary_head NAME         the first line of $OUT/summary.txt: DRY, the GPU (or cpu), the commit
#   finish                    the end of a run: summary, logs' tails, scratch folder; 0 when nothing failed
#
# It also puts the checkout on PYTHONPATH, exports QT_HARD_GIT_COMMIT (the commit recorded with every
# row: the one given, else the checkout's, "+dirty" with uncommitted changes), MPLBACKEND and the Hugging
# Face offline switches, and makes $WORK a new temporary folder (OWN_WORK=1) when it is not given:
# the scratch folder, removed at the end unless KEEP_WORK=1. Each part's log goes to $OUT/logs/, the
# summary to $OUT/summary.txt; the exit status is 1 when a part failed, after writing what the others made.
START=$(date +%s)
PY=${PY:-python3}
DRY=${DRY:-0}
: "${OUT:?set OUT to the folder the results are written into}"
export HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1

elapsed() { echo $(($(date +%s) - START)); }
left() { local l=$((DEADLINE - $(elapsed))); [ "$l" -gt 5 ] && echo "$l" || echo 5; }
within() { local l; l=$(left); [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }

export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if [ -z "${QT_HARD_GIT_COMMIT:-}" ]; then
    QT_HARD_GIT_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
    [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && QT_HARD_GIT_COMMIT+="+dirty"
fi
export QT_HARD_GIT_COMMIT MPLBACKEND=Agg
OWN_WORK=0
[ -z "${WORK:-}" ] && WORK=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX") && OWN_WORK=1

banner() {
    echo "== $(date -u +%FT%TZ) $1 (DRY=$DRY, deadline ${DEADLINE}s, commit $QT_HARD_GIT_COMMIT)"
    nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
    "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
    echo "cpus $(nproc); python $("$PY" -V 2>&1)"
}

unxz() {
    if command -v xz >/dev/null; then xz -dc "$1"; else
        "$PY" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; fi
}

# Unpacks $CARRY/books.tar and rest.tar.xz into $WORK/data and exports it as QT_HARD_DATA (status 0);
# without the carry under DRY=1, keeps the data root $QT_HARD_DATA, which must be set (status 1);
# without it otherwise, ends the script with an error.
unpack_books_carry() {
    if [ -f "$CARRY/books.tar" ]; then
        tar -C "$WORK/data" -xf "$CARRY/books.tar" || echo "!! books.tar did not unpack"
        unxz "$CARRY/rest.tar.xz" | tar -C "$WORK/data" -xf - || echo "!! rest.tar.xz did not unpack"
        export QT_HARD_DATA=$WORK/data
        return 0
    fi
    if [ "$DRY" = 1 ]; then
        : "${QT_HARD_DATA:?DRY=1 without $CARRY reads the data root: set QT_HARD_DATA}"
        return 1
    fi
    echo "error: no $CARRY/books.tar (make it with scripts/device_s2v_prepare.sh)" >&2
    exit 1
}

log_tails() {
    local n=$1 f
    shift
    echo "-- logs (tails)"
    for f in "$@"; do
        echo "[${f##*/}]"
        tail -"$n" "$f" 2>/dev/null | cut -c1-300
    done
}

run_folders() {
    LOGS=$OUT/logs
    FAILED=""
    mkdir -p "$OUT" "$LOGS" "$WORK/data" "$@"
}

GPU=$(nvidia-smi -L 2>/dev/null | head -1) # empty without a GPU (head succeeds even then)
summary_head() { echo "== $1 (DRY=$DRY) on ${GPU:-cpu}, commit $QT_HARD_GIT_COMMIT"; }

# Closes $OUT/summary.txt with the time and the parts that failed, prints the logs' tails and the
# summary, removes a scratch folder of the script's own (checkpoints, data; KEEP_WORK=1 keeps it).
# Its status, the script's last: 0 when no part failed.
finish() {
    echo "== $(elapsed)s in all; failed:${FAILED:- none}" >>"$OUT/summary.txt"
    log_tails 4 "$LOGS"/*.log
    cat "$OUT/summary.txt"
    [ "$OWN_WORK" = 1 ] && [ "${KEEP_WORK:-0}" != 1 ] && rm -rf "$WORK"
    [ -z "$FAILED" ]
}
