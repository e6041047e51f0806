#!/bin/sh
# National Compute, first job on a Public Research node: the same nanoGPT run the clusters get, in the
# stock PyTorch container for the node's GPUs, detached from the ssh session.
#   ssh <ssh_user>@<public_ip> 'curl -fsSL https://access.nationalcompute.com/first-job/nanogpt-node.sh | sh'
#   ssh <ssh_user>@<public_ip> 'tail -F ~/first-job/nanogpt.out'
# Time-boxed to about an hour; it ends on its own. Stop it early with: docker rm -f nanogpt
# The node's disk dies with the lease: copy ~/first-job/nanoGPT/out-shakespeare-char and
# ~/first-job/nanogpt.out off the node before it is released.
set -eu

DIR=${NC_FIRST_JOB_DIR:-$HOME/first-job}
TIME_BOX=${NC_FIRST_JOB_TIME_BOX:-3600}
MAX_ITERS=${NC_FIRST_JOB_MAX_ITERS:-5000}
NANOGPT_TARBALL=https://codeload.github.com/karpathy/nanoGPT/tar.gz/refs/heads/master
SHAKESPEARE=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt

say() { printf 'nanogpt-node: %s\n' "$*"; }
die() { printf 'nanogpt-node: %s\n' "$*" >&2; exit 1; }

if ! command -v docker >/dev/null 2>&1; then
    die "docker is not installed on this node, so nothing was started. Install docker (with the GPU container runtime) or run the job another way."
fi
docker info >/dev/null 2>&1 ||
    die "docker is installed but its daemon does not answer for $(id -un) (is it running? is $(id -un) in the docker group?)"

if [ -n "$(docker ps -q --filter name='^nanogpt$')" ]; then
    say "a nanogpt container is already running: follow it with tail -F $DIR/nanogpt.out, stop it with docker rm -f nanogpt"
    exit 0
fi
docker rm -f nanogpt >/dev/null 2>&1 || true

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    GPUS=$(nvidia-smi -L | grep -c '^GPU')
    IMAGE=pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
    set -- --gpus all
elif [ -e /dev/kfd ]; then
    GPUS=$(grep -lv '^0$' /sys/class/kfd/kfd/topology/nodes/*/gpu_id 2>/dev/null | wc -l)
    IMAGE=rocm/pytorch:latest
    set -- --device /dev/kfd --device /dev/dri --group-add video --security-opt seccomp=unconfined
else
    die "no NVIDIA or AMD GPU found on this node"
fi
[ "$GPUS" -gt 0 ] || die "no GPU found on this node"

fetch() { curl -fsSL --retry 3 -o "$2" "$1"; }
mkdir -p "$DIR"
if [ ! -f "$DIR/nanoGPT/train.py" ]; then
    say "fetching nanoGPT into $DIR/nanoGPT"
    tmp=$(mktemp -d)
    fetch "$NANOGPT_TARBALL" "$tmp/nanoGPT.tar.gz"
    tar -xzf "$tmp/nanoGPT.tar.gz" -C "$tmp"
    rm -rf "$DIR/nanoGPT"
    mv "$tmp/nanoGPT-master" "$DIR/nanoGPT"
    rm -rf "$tmp"
fi
[ -s "$DIR/nanoGPT/data/shakespeare_char/input.txt" ] ||
    fetch "$SHAKESPEARE" "$DIR/nanoGPT/data/shakespeare_char/input.txt"

if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
    say "pulling $IMAGE (the first start takes several minutes)"
    docker pull "$IMAGE"
fi
say "starting nanoGPT on $GPUS GPUs in $IMAGE, time-boxed to $TIME_BOX seconds"
docker run -d --name nanogpt --ipc=host "$@" \
    -v "$DIR:/workspace" -w /workspace/nanoGPT \
    -e PYTHONUNBUFFERED=1 \
    "$IMAGE" \
    bash -c "{ pip install --quiet --no-cache-dir numpy requests \
      && { [ -f data/shakespeare_char/train.bin ] || python data/shakespeare_char/prepare.py; } \
      && timeout $TIME_BOX torchrun --standalone --nproc_per_node=$GPUS train.py config/train_shakespeare_char.py \
           --compile=False --gradient_accumulation_steps=$GPUS \
           --max_iters=$MAX_ITERS --lr_decay_iters=$MAX_ITERS --eval_interval=250; \
      } > /workspace/nanogpt.out 2>&1" >/dev/null

say "started container nanogpt. Follow: tail -F $DIR/nanogpt.out   Stop early: docker rm -f nanogpt"
