#!/bin/bash
# Builds gpu_carry_retrieval/ (git-ignored), the data scripts/device_retrieval.sh needs besides the
# checkout: beir/nfcorpus and beir/scifact copied from the data root $QT_HARD_DATA, byte for byte (about
# 17 MB; the device machine takes 64 MiB of carried files). Run from anywhere; rebuilds the folder:
#
#   QT_HARD_DATA=/path/to/data bash scripts/device_retrieval_prepare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${QT_HARD_DATA:?set QT_HARD_DATA to the data root (folders beir/nfcorpus, beir/scifact)}"
CARRY=gpu_carry_retrieval
rm -rf "$CARRY"
mkdir -p "$CARRY/beir"
for ds in nfcorpus scifact; do
    cp -r "$QT_HARD_DATA/beir/$ds" "$CARRY/beir/$ds"
done
du -sh "$CARRY"
