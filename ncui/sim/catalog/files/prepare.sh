#!/bin/sh
# National Compute, first job on a Slurm cluster. On the login node:
#   curl -fsSL https://access.nationalcompute.com/first-job/prepare.sh | sh
#   sbatch --nodes=1 ~/first-job/nanogpt.sbatch
#   squeue --me
#   tail -F nanogpt-<jobid>.out
# Fetches nanoGPT and its Shakespeare text into ~/first-job (compute nodes may have no internet) and
# writes ~/first-job/nanogpt.sbatch. Safe to run again.
set -eu

BASE_URL=${NC_FIRST_JOB_URL:-https://access.nationalcompute.com/first-job}
DIR=${NC_FIRST_JOB_DIR:-$HOME/first-job}
NANOGPT_TARBALL=https://codeload.github.com/karpathy/nanoGPT/tar.gz/refs/heads/master
SHAKESPEARE=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt

say() { printf 'prepare: %s\n' "$*"; }
die() { printf 'prepare: %s\n' "$*" >&2; exit 1; }

fetch() { # fetch URL FILE
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --retry 3 -o "$2" "$1"
    elif command -v wget >/dev/null 2>&1; then
        wget -q -O "$2" "$1"
    else
        die "neither curl nor wget is installed on this login node"
    fi
}

mkdir -p "$DIR"
cd "$DIR"

if [ "${NC_FIRST_JOB_SIMULATE:-0}" = 1 ]; then
    say "NC_FIRST_JOB_SIMULATE=1: not downloading nanoGPT (the batch script will simulate the run)"
    mkdir -p nanoGPT
elif [ -f nanoGPT/train.py ]; then
    say "nanoGPT is already in $DIR/nanoGPT"
else
    say "fetching nanoGPT into $DIR/nanoGPT"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    fetch "$NANOGPT_TARBALL" "$tmp/nanoGPT.tar.gz"
    tar -xzf "$tmp/nanoGPT.tar.gz" -C "$tmp"
    rm -rf nanoGPT
    mv "$tmp/nanoGPT-master" nanoGPT
fi

text=nanoGPT/data/shakespeare_char/input.txt
if [ "${NC_FIRST_JOB_SIMULATE:-0}" != 1 ] && [ ! -s "$text" ]; then
    say "fetching the Shakespeare text"
    fetch "$SHAKESPEARE" "$text"
fi

say "writing $DIR/nanogpt.sbatch"
fetch "$BASE_URL/nanogpt.sbatch" nanogpt.sbatch.part
mv nanogpt.sbatch.part nanogpt.sbatch
chmod +x nanogpt.sbatch

cat <<EOF
prepare: ready. Submit, then follow the log (it lands in the directory you submit from):
  sbatch --nodes=1 $DIR/nanogpt.sbatch
  squeue --me
  tail -F nanogpt-<jobid>.out
EOF
