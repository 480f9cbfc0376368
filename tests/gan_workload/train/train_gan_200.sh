#!/bin/sh
# 200 steps of the default configuration (32x32, batch 64, cpu backend) on the simulated
# device: D's loss behaves like a GAN's and the samples change.
# usage: train_gan_200.sh TRAIN TRAIN_CHECK SIM_LIB_DIR WORK_DIR
set -eu
train=$1 check=$2 sim=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
LD_LIBRARY_PATH="$sim" "$train" --steps 200 --log-every 5 \
    --samples-initial "$dir/step0.png" --samples "$dir/step200.png" >"$dir/log.txt"
grep -E '^(G|D) parameters|^time:|^done:' "$dir/log.txt"
"$check" losses "$dir/log.txt"
"$check" grids "$dir/step0.png" "$dir/step200.png"
