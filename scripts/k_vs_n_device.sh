#!/bin/bash
# The k-versus-N grid on a rented GPU machine without nltk or qt-hard installed, in calls of at
# most ~10 minutes, each continuing the previous one's results. Run from the repository root:
#
#   bash scripts/k_vs_n_device.sh                    # env: EPOCHS, LIN (default 50/50), GRID_S, WORKERS
#
# It expects, in the ignored folder $CARRY (default runs/i15_gpu), pylibs.tar.xz (nltk, click,
# defusedxml from a venv's site-packages, for tokenizing) and wiki_3029_200.tar.gz (the Wiki-3029
# folder `qt-hard grid run k-vs-n ... --plan` builds from $QT_HARD_DATA/wikipedia), and continues
# $CARRY/results.csv when it is there. Made on the development machine with
#   SP=.venv/lib/python3.11/site-packages; tar -C $SP --exclude=__pycache__ -cJf $CARRY/pylibs.tar.xz nltk click defusedxml
#   tar -C runs/k_vs_n/cache -czf $CARRY/wiki_3029_200.tar.gz wiki_3029_200
# Writes $OUT/results.csv (copy it back to $CARRY/results.csv before the next call), run.log, prepare.log.
set -u
CARRY=${CARRY:-runs/i15_gpu}
export PYTHONPATH=$PWD:$PWD/$CARRY/lib OMP_NUM_THREADS=1
mkdir -p "$CARRY/lib" runs/k_vs_n/cache "$OUT"
tar -C "$CARRY/lib" -xJf "$CARRY/pylibs.tar.xz"
[ -d runs/k_vs_n/cache/wiki_3029_200 ] || tar -C runs/k_vs_n/cache -xzf "$CARRY/wiki_3029_200.tar.gz"
python -m qt_hard.cli grid run k-vs-n configs/k_vs_n.yaml --cache runs/k_vs_n/cache --plan --no-estimate > "$OUT/prepare.log" 2>&1 || { tail "$OUT/prepare.log"; exit 1; }
[ -f "$CARRY/results.csv" ] && cp "$CARRY/results.csv" "$OUT/results.csv"
timeout "${GRID_S:-480}" python -m qt_hard.cli grid run k-vs-n configs/k_vs_n.yaml --cache runs/k_vs_n/cache \
    --results "$OUT/results.csv" --workers "${WORKERS:-8}" --device cuda \
    --epochs "${EPOCHS:-50}" --linear-epochs "${LIN:-50}" --no-prepare > "$OUT/run.log" 2>&1
echo "run exit $? (124: stopped by GRID_S; the finished cells are in results.csv)"
head -12 "$OUT/run.log"; tail -3 "$OUT/run.log"
