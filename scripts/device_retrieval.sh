#!/bin/bash
# Both retrieval grids, NFCorpus then SciFact, on one GPU machine in one call of at most ~560 s: for each
# dataset, MNRL's recipe on dev (its committed recipe.jsonl when results/<dataset>/ has one, else the
# recipe grid at once: learning rates x epochs or steps, seed 0), then every row of the comparison with
# SEEDS (default 5), the cells side by side on the GPU (qt-hard grid run <dataset> --workers WORKERS
# --device cuda); every part under its own deadline (the time left shared between the two datasets), each
# dataset's ledgers and tables copied to $OUT/<dataset>/ as soon as its part ends:
#
#   0. the data: gpu_carry_retrieval/beir/{nfcorpus,scifact} (scripts/device_retrieval_prepare.sh copies
#      them there from the data root, about 17 MB), else $QT_HARD_DATA.
#   a. NFCorpus: recipe (when missing) and grid, until half the time left -> $OUT/nfcorpus/
#   b. SciFact: the same, until SCORE_RESERVE_S before the deadline -> $OUT/scifact/
#   c. the tables of what finished (--summary-only): table.md with the two-level verdicts, recipe.md.
#
# Run from the repository root, with $OUT an empty folder:
#
#   bash scripts/device_retrieval.sh        # env: PY (python3), DEADLINE (560 s), SEEDS, WORKERS, ROWS, DRY=1
#
# $WORK, the commit recorded, logs/, summary.txt and the exit status are scripts/_device.sh's. Copy the
# ledgers into results/<dataset>/ and rerun the summary there to keep them.
#
# DRY=1: the same steps at toy size on a machine without a GPU: slices of both datasets cut from the data
# root (12-32 queries), batch 4, inputs cut to 16 tokens, the row mnrl, seed 0, one lr and
# two measuring points, one worker on the CPU, a deadline of 840 s.
set -u
DEADLINE=${DEADLINE:-560}
SCORE_RESERVE_S=${SCORE_RESERVE_S:-30}
SEEDS=${SEEDS:-0,1,2,3,4}
WORKERS=${WORKERS:-8}
ROWS=${ROWS:-}
CARRY=${CARRY:-gpu_carry_retrieval}
source "${BASH_SOURCE%/*}/_device.sh"  # the helpers the device scripts share (listed at its top)
run_folders "$WORK/nfcorpus" "$WORK/scifact"

DEVICE=cuda
COMMON=(--batch-size 32 --max-seq-length 128 --threads 2)
RECIPE_NF=(--lrs 5e-5,1e-4,2e-4 --epochs 0.5,1,2,4,8)
RECIPE_SF=(--lrs 5e-5,1e-4,2e-4 --select-steps 22,44,88,176)
if [ "$DRY" = 1 ]; then
    DEADLINE=${DRY_DEADLINE:-840}
    DEVICE=cpu
    COMMON=(--batch-size 4 --max-seq-length 16 --threads 1)
    RECIPE_NF=(--lrs 1e-4 --epochs 0.5,1)
    RECIPE_SF=(--lrs 1e-4 --select-steps 1,2)
    SEEDS=0
    WORKERS=1
    ROWS=mnrl
    export OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
fi

banner device_retrieval

# ---------------------------------------------------------------- 0. data
if [ -d "$CARRY/beir" ]; then
    export QT_HARD_DATA=$PWD/$CARRY
elif [ "$DRY" = 1 ]; then
    : "${QT_HARD_DATA:?DRY=1 without $CARRY reads the data root: set QT_HARD_DATA}"
    "$PY" - "$QT_HARD_DATA" "$WORK/data" <<'EOF' || FAILED+=" slices"
import sys
from pathlib import Path
from qt_hard.experiments.specs import nfcorpus, scifact
src, dst = Path(sys.argv[1]) / "beir", Path(sys.argv[2]) / "beir"
nfcorpus.write_slice(src / "nfcorpus", dst / "nfcorpus", queries=32, docs=150)
scifact.write_slice(src / "scifact", dst / "scifact", train=12, test=4, others=12)
EOF
    export QT_HARD_DATA=$WORK/data
else
    : "${QT_HARD_DATA:?no $CARRY/beir (scripts/device_retrieval_prepare.sh) and no QT_HARD_DATA}"
fi

# ------------------------------------------------------ a, b. recipe (when missing) and grid, per dataset
# one_dataset NAME SECONDS RECIPE-OPTIONS...: the dataset's recipe (when missing) and grid, within SECONDS
one_dataset() {
    local ds=$1 until=$(($(elapsed) + $2)) dir=$WORK/$1 rc
    shift 2
    rest() { local r=$((until - $(elapsed))); [ "$r" -gt 5 ] && echo "$r" || echo 5; }
    [ -f "results/$ds/recipe.jsonl" ] && [ "$DRY" != 1 ] && cp "results/$ds/recipe.jsonl" "$dir/"
    if [ ! -f "$dir/recipe.jsonl" ]; then
        timeout -k 10 "$(rest)" "$PY" -m qt_hard.cli grid run "$ds-recipe" --out "$dir" "${COMMON[@]}" "$@" \
            --workers "$WORKERS" --device "$DEVICE" >"$LOGS/$ds-recipe.log" 2>&1 || FAILED+=" $ds-recipe"
        echo "$ds recipe at $(elapsed)s: $(grep '^Chosen' "$dir/recipe.md" 2>/dev/null || echo 'none')"
    fi
    local grid=("$PY" -m qt_hard.cli grid run "$ds" --out "$dir" "${COMMON[@]}" --seeds "$SEEDS" --device "$DEVICE")
    [ -n "$ROWS" ] && grid+=(--rows "$ROWS")
    timeout -k 10 "$(rest)" "${grid[@]}" --workers "$WORKERS" >"$LOGS/$ds.log" 2>&1
    rc=$?
    echo "$ds grid exit $rc at $(elapsed)s: $(($(wc -l <"$dir/results.jsonl" 2>/dev/null || echo 1) - 1)) records"
    [ "$rc" = 0 ] || FAILED+=" $ds"
    "${grid[@]}" --summary-only >"$LOGS/$ds-summary.log" 2>&1 || FAILED+=" $ds-summary"
    mkdir -p "$OUT/$ds"
    cp "$dir"/*.jsonl "$dir"/*.md "$OUT/$ds/" 2>/dev/null
}

one_dataset nfcorpus "$((($(left) - SCORE_RESERVE_S) / 2))" "${RECIPE_NF[@]}"
one_dataset scifact "$(($(left) - SCORE_RESERVE_S))" "${RECIPE_SF[@]}"

# ---------------------------------------------------------------- summary
{
    summary_head device_retrieval
    for ds in nfcorpus scifact; do
        echo "-- $ds: $(grep -h '^Chosen' "$OUT/$ds/recipe.md" 2>/dev/null | head -1)"
        grep -h '^Chosen on dev' "$OUT/$ds/table.md" 2>/dev/null
    done
} >"$OUT/summary.txt"
finish
