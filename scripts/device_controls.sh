#!/bin/bash
# Three result grids at once on one GPU machine (16 CPU cores, one GPU), in one call of at most
# ~560 s, every part under its own time limit so that the results are always packed:
#
#   1. graph controls (CPU cores only): qt-hard grid run graph-table, each method at both learning rates
#      (infograph, infograph_lr0.01, hscl_b1, hscl_b1_lr1e-3) and HCL as its code computes it beside
#      that code's uniform row (infograph_code, hcl_code_b1, hcl_code_b2, hcl_code_b10); GRAPH_ROWS
#      replaces the list. The table's default repeats and epochs (200), GRAPH_WORKERS (default 6)
#      single-threaded processes, datasets in the order MUTAG, PTC_MR, IMDB-BINARY, ENZYMES,
#      IMDB-MULTI (the cells are claimed in that order, repeat by repeat, so what the time allows is
#      the cheap datasets whole). The rows that results/graph_table.csv already has (infograph,
#      hscl_b1, infograph_code) run again: those cells were made by an earlier state of the code,
#      which draws another model from the same seed, so each comparison here is within one code. When
#      gpu_carry/graph_seed.jsonl is there (a graph-table ledger of the same setup: 200 epochs, no
#      overrides), it is the ledger the grid starts from, and its cells are not run again.
#   2. MoCo-v2 against MoCoRing on the GPU: qt-hard grid run vision-table, configs/moco_cifar10.yaml
#      (ResNet-18), rows uniform,ring, seeds 0,1, train.epochs=40, train.mixed_precision=bf16,
#      as VISION_COPIES (default 2) copies of the command on one results folder, each claiming the
#      cell it trains. MOCO_QUEUE=n sets model.queue_size (default: the config's 4,096).
#   3. k versus N, the B = 1000 row (all in-batch negatives) at 50 + 50 epochs on the GPU:
#      qt-hard grid run k-vs-n configs/k_vs_n_b1000_long.yaml (N = 100, 1000; seeds 0-4), KVN_WORKERS
#      (default 10) worker processes of one thread; and, from SHUF_AFTER seconds (default 100, when the
#      N = 100 cells are done), the shuffled control at N = 1000 (configs/k_vs_n_collisions_1000.yaml,
#      10 + 10 epochs, 3 workers) continuing results/k_vs_n/collisions_1000.jsonl (its k = 100 cells
#      are there, so the k = 1000 ones run).
#
# Run from the repository root, with $OUT an empty folder:
#
#   bash scripts/device_controls.sh                  # env: PY (python3), DEADLINE (480 s), DRY=1
#
# It expects gpu_carry/ (git-ignored; made by scripts/device_controls_prepare.sh from a data root):
# data.tar.xz (tu/ and cifar10/ in the data root's layout) and kvn_cache.tar.xz (the k-versus-N cache
# folder, unpacked at $KVN_ROOT, default /tmp/qt_hard_kvn, where its token cache was made), optionally
# graph_seed.jsonl. It needs no package beyond torch, torch-geometric, accelerate, tokenizers,
# scikit-learn, numpy, scipy, matplotlib, pyyaml (no install: PYTHONPATH is the checkout). Results go
# to $WORK (default /tmp/device_controls); the commit recorded with every cell is $QT_HARD_GIT_COMMIT
# (else the checkout's, when it has .git).
#
# Writes to $OUT: device_controls.tar.gz (graph_controls/, moco_gpu/ and k_vs_n/ with their ledgers
# results.jsonl / b1000_long.jsonl, CSVs, tables and per-run metrics, without checkpoints or model
# weights; logs/), summary.txt (the tables printed at the end). While the parts run,
# snapshot.tar.gz holds the ledgers as they were a minute ago (removed once the final archive is made).
#
# PARTS (default "graph vision kvn") names the parts to run: PARTS=graph continues the graph ledger
# alone (seeded from gpu_carry/graph_seed.jsonl), with every core on it. GRAPH_JOBS (below) splits the
# graph part into invocations at once, each with its own rows, datasets, repeats and workers, e.g.
#   GRAPH_JOBS="9|infograph,hscl_b1|IMDB-BINARY,ENZYMES|10;7||IMDB-MULTI,ENZYMES|"
#
# DRY=1: the same steps at toy size on a machine without a GPU (graph: 2 epochs, 1 repeat, MUTAG;
# vision: resnet_tiny, 512 images, 1 epoch; k versus N: one cell of 1 + 1 epochs on the CPU).
set -u
DEADLINE=${DEADLINE:-480}      # seconds after the start by which every part is stopped
CARRY=${CARRY:-gpu_carry}
WORK=${WORK:-/tmp/device_controls}
KVN_ROOT=${KVN_ROOT:-/tmp/qt_hard_kvn}
GRAPH_WORKERS=${GRAPH_WORKERS:-6}
KVN_WORKERS=${KVN_WORKERS:-10}
VISION_COPIES=${VISION_COPIES:-2}
MOCO_QUEUE=${MOCO_QUEUE:-}
PARTS=" ${PARTS:-graph vision kvn} "
has() { [[ "$PARTS" == *" $1 "* ]]; }
VPIDS=()
KPID=""
SPID=""
source "${BASH_SOURCE%/*}/_device.sh"  # the helpers the device scripts share (listed at its top)
export TOKENIZERS_PARALLELISM=false

LOGS=$WORK/logs
GOUT=$WORK/graph_controls
VOUT=$WORK/moco_gpu
KOUT=$WORK/k_vs_n
KCSV=$KOUT/b1000_long.csv
mkdir -p "$OUT" "$LOGS" "$GOUT" "$VOUT" "$KOUT" "$WORK/data" "$KVN_ROOT"

GROWS=${GRAPH_ROWS:-infograph,infograph_lr0.01,hscl_b1,hscl_b1_lr1e-3,infograph_code,hcl_code_b1,hcl_code_b2,hcl_code_b10}
GDATA=MUTAG,PTC_MR,IMDB-BINARY,ENZYMES,IMDB-MULTI
GARGS=()
VSET=(train.epochs=40 train.mixed_precision=bf16 train.progress=false)
[ -n "$MOCO_QUEUE" ] && VSET+=("model.queue_size=$MOCO_QUEUE")
KARGS=(--epochs 50 --linear-epochs 50 --device cuda --workers "$KVN_WORKERS" --threads 1)
if [ "$DRY" = 1 ]; then
    GDATA=MUTAG
    GARGS=(--epochs 2 --repeats 1)
    GRAPH_WORKERS=2
    VSET+=(train.epochs=1 model.arch=resnet_tiny model.width=8 train.batch_size=64 data.max_train=512
        data.max_test=256 eval.linear_epochs=2 model.queue_size=256)
    KARGS=(--epochs 1 --linear-epochs 1 --seeds 0 --device cpu --workers 1 --threads 1 --max-cells 1)
fi

banner device_controls

# ---------------------------------------------------------------- unpack the carry
unxz "$CARRY/data.tar.xz" | tar -C "$WORK/data" -xf - || echo "!! data.tar.xz did not unpack"
unxz "$CARRY/kvn_cache.tar.xz" | tar -C "$KVN_ROOT" -xf - || echo "!! kvn_cache.tar.xz did not unpack"
export QT_HARD_DATA=$WORK/data
echo "unpacked in $(elapsed)s: $(ls "$QT_HARD_DATA"/tu | tr '\n' ' ')"

# ---------------------------------------------------------------- graph: seed the ledger
# gpu_carry/graph_seed.jsonl becomes the ledger (the grid refuses another setup); under DRY=1 a scratch one.
if [ -f "$CARRY/graph_seed.jsonl" ]; then
    SEED_INTO=$GOUT
    [ "$DRY" = 1 ] && SEED_INTO=$WORK/graph_seed_check && mkdir -p "$SEED_INTO"
    [ -f "$SEED_INTO/results.jsonl" ] || cp "$CARRY/graph_seed.jsonl" "$SEED_INTO/results.jsonl"
    echo "graph ledger $SEED_INTO/results.jsonl: $(($(wc -l <"$SEED_INTO/results.jsonl") - 1)) cells" | tee "$LOGS/graph_seed.log"
    [ "$DRY" = 1 ] && "$PY" -m qt_hard.cli grid run graph-table --out "$SEED_INTO" --rows "infograph_code,$GROWS" --summary-only 2>&1 | grep -E '^\|' | tail -8
fi

# ---------------------------------------------------------------- the three parts, at once
# GRAPH_JOBS: invocations of the graph table on the one ledger at once, "WORKERS|ROWS|DATASETS|REPEATS"
# separated by ";" (an empty field takes the default above; REPEATS empty: the table's default).
# Each claims its cells, so jobs that overlap never run a cell twice.
GPIDS=()
IFS=';' read -r -a GJOBS <<<"${GRAPH_JOBS:-$GRAPH_WORKERS|||}"
[ "$DRY" = 1 ] && GJOBS=("$GRAPH_WORKERS|||")
has graph || GJOBS=()
for j in "${!GJOBS[@]}"; do
    IFS='|' read -r gw gr gd grep_ <<<"${GJOBS[$j]}"
    rep=()
    [ -n "$grep_" ] && rep=(--repeats "$grep_")
    OMP_NUM_THREADS=1 timeout -k 10 "$(left)" "$PY" -m qt_hard.cli grid run graph-table --out "$GOUT" --rows "${gr:-$GROWS}" \
        --datasets "${gd:-$GDATA}" --workers "${gw:-$GRAPH_WORKERS}" "${rep[@]}" "${GARGS[@]}" >"$LOGS/graph_$j.log" 2>&1 &
    GPIDS+=($!)
    sleep 1
done

has vision || VISION_COPIES=0
for i in $(seq 1 "$VISION_COPIES"); do
    seeds=0,1
    [ $((i % 2)) = 0 ] && seeds=1,0 # the copies start on different seeds (each seed's random-init file is written once)
    OMP_NUM_THREADS=2 timeout -k 10 "$(left)" "$PY" -m qt_hard.cli grid run vision-table --config configs/moco_cifar10.yaml \
        --out "$VOUT" --rows uniform,ring --seeds "$seeds" --set "${VSET[@]}" >"$LOGS/vision_$i.log" 2>&1 &
    VPIDS+=($!)
    sleep 2
done

has kvn && (
    # The token cache is keyed on the Wiki files' absolute paths and mtimes: check it is hit (else
    # tokenize once here, before the workers, instead of once per cell).
    "$PY" - "$KVN_ROOT/cache" <<'EOF'
import sys, time
from pathlib import Path
from qt_hard.data.wiki import tokenize_wiki
cache = Path(sys.argv[1])
before = set((cache / "tokens").glob("*.npz"))
t0 = time.perf_counter()
tokenize_wiki(cache / "wiki_3029_200", None, cache_dir=cache / "tokens", num_proc=8)
after = set((cache / "tokens").glob("*.npz"))
print(f"token cache {'hit' if after == before else 'MISSED: tokenized again'} ({time.perf_counter() - t0:.1f}s)", flush=True)
EOF
    OMP_NUM_THREADS=1 timeout -k 10 "$(left)" "$PY" -m qt_hard.cli grid run k-vs-n configs/k_vs_n_b1000_long.yaml \
        --cache "$KVN_ROOT/cache" --results "$KCSV" --no-estimate --no-prepare "${KARGS[@]}"
    echo "k_vs_n exit $?"
) >"$LOGS/k_vs_n.log" 2>&1 &
has kvn && KPID=$!

SCSV=$KOUT/collisions_1000.csv
has kvn && cp results/k_vs_n/collisions_1000.jsonl results/k_vs_n/collisions_1000.csv "$KOUT/"  # the k = 100 cells
SARGS=(--epochs 10 --linear-epochs 10 --device cuda --workers 3 --threads 1)
[ "$DRY" = 1 ] && SARGS=(--epochs 1 --linear-epochs 1 --seeds 0 --device cpu --workers 1 --threads 1 --max-cells 1)
has kvn && (
    sleep "${SHUF_AFTER:-100}"
    OMP_NUM_THREADS=1 timeout -k 10 "$(left)" "$PY" -m qt_hard.cli grid run k-vs-n configs/k_vs_n_collisions_1000.yaml \
        --cache "$KVN_ROOT/cache" --results "$SCSV" --no-estimate --no-prepare "${SARGS[@]}"
    echo "shuffled control exit $?"
) >"$LOGS/k_vs_n_shuffled.log" 2>&1 &
has kvn && SPID=$!

cells() { [ -f "$1" ] && echo $(($(wc -l <"$1") - 1)) || echo 0; }
snapshot() {
    (cd "$WORK" && tar -czf "$OUT/.snapshot.tar.gz" --ignore-failed-read \
        graph_controls/results.jsonl moco_gpu/results.jsonl k_vs_n/b1000_long.jsonl k_vs_n/collisions_1000.jsonl logs 2>/dev/null)
    mv -f "$OUT/.snapshot.tar.gz" "$OUT/snapshot.tar.gz" 2>/dev/null
}
LAST_SNAP=$(elapsed)
while true; do
    sleep 5
    alive=""
    for p in "${GPIDS[@]+"${GPIDS[@]}"}"; do kill -0 "$p" 2>/dev/null && alive+=" graph" && break; done
    for p in "${VPIDS[@]+"${VPIDS[@]}"}"; do kill -0 "$p" 2>/dev/null && alive+=" vision" && break; done
    [ -n "$KPID" ] && kill -0 "$KPID" 2>/dev/null && alive+=" k_vs_n"
    [ -n "$SPID" ] && kill -0 "$SPID" 2>/dev/null && alive+=" shuffled"
    [ -z "$alive" ] && break
    if [ $(($(elapsed) - LAST_SNAP)) -ge 60 ]; then
        snapshot
        LAST_SNAP=$(elapsed)
        echo "[$(elapsed)s] running:$alive; finished cells: graph $(cells "$GOUT/results.jsonl"), vision $(cells "$VOUT/results.jsonl"), k_vs_n $(cells "$KOUT/b1000_long.jsonl")"
    fi
done
for p in "${GPIDS[@]+"${GPIDS[@]}"}"; do wait "$p"; echo "graph job exit $? (124: stopped at the deadline)"; done
for p in "${VPIDS[@]+"${VPIDS[@]}"}"; do wait "$p"; echo "vision copy exit $?"; done
[ -n "$KPID" ] && wait "$KPID"
[ -n "$SPID" ] && wait "$SPID"
echo "parts done at $(elapsed)s"

# ---------------------------------------------------------------- tables (each under a short limit)
timeout 25 "$PY" -m qt_hard.cli grid run graph-table --out "$GOUT" --rows "$GROWS" --datasets "$GDATA" --summary-only \
    >"$LOGS/graph_table.txt" 2>&1 &
S1=$!
timeout 30 "$PY" -m qt_hard.cli grid run vision-table --config configs/moco_cifar10.yaml --out "$VOUT" \
    --rows uniform,ring --seeds 0,1 --set "${VSET[@]}" --report-only >"$LOGS/vision_table.txt" 2>&1 &
S2=$!
timeout 25 "$PY" -m qt_hard.cli grid run k-vs-n --results "$KCSV" --summary-only --diagnose >"$LOGS/k_vs_n_table.txt" 2>&1 &
S3=$!
wait $S1 $S2 $S3

# ---------------------------------------------------------------- pack
{
    echo "== graph controls (SVM accuracy %, mean ± sample std over repeats)"
    grep -E '^\||^graph table|cells' "$LOGS/graph_table.txt" | tail -20
    echo "== MoCo-v2 (uniform) against MoCoRing (ring), ResNet-18, 40 epochs, bf16, queue ${MOCO_QUEUE:-4096 (config)}"
    grep -E '^\||^MoCo|^no finished' "$LOGS/vision_table.txt" | tail -8
    echo "== k versus N, B = 1000, all in-batch negatives"
    tail -8 "$LOGS/k_vs_n_table.txt"
    echo "== $(elapsed)s in all"
} >"$WORK/summary.txt"
cp "$WORK/summary.txt" "$LOGS/"
(cd "$WORK" && tar -czf "$OUT/device_controls.tar.gz" --exclude='checkpoints' --exclude='final' \
    --exclude='claims' --exclude='*.pt' --exclude='*.safetensors' --exclude='events.out.tfevents*' \
    graph_controls moco_gpu k_vs_n logs summary.txt)
if [ "$(stat -c %s "$OUT/device_controls.tar.gz")" -gt 15000000 ]; then
    echo "!! archive over 15 MB: packing the ledgers, CSVs, tables and logs only"
    (cd "$WORK" && tar -czf "$OUT/device_controls.tar.gz" --ignore-failed-read graph_controls/results.* \
        graph_controls/table.json moco_gpu/results.* moco_gpu/table.md moco_gpu/knn_init_s*.json \
        moco_gpu/*/eval.csv moco_gpu/*/eval.json k_vs_n/b1000_long.* k_vs_n/collisions_1000.* logs summary.txt)
fi
rm -f "$OUT/snapshot.tar.gz"
cp "$WORK/summary.txt" "$OUT/summary.txt"
echo "== packed $(tar -tzf "$OUT/device_controls.tar.gz" | wc -l) files, $(du -h "$OUT/device_controls.tar.gz" | cut -f1)"
for f in graph_controls/results.jsonl moco_gpu/results.jsonl k_vs_n/b1000_long.jsonl k_vs_n/collisions_1000.jsonl; do
    tar -tzf "$OUT/device_controls.tar.gz" | grep -qx "$f" && echo "   $f: $(($(wc -l <"$WORK/$f") - 1)) cells" || echo "   $f: MISSING"
done
log_tails 3 "$LOGS"/graph_*.log "$LOGS"/vision_1.log "$LOGS"/k_vs_n.log "$LOGS"/k_vs_n_shuffled.log
cat "$WORK/summary.txt"
