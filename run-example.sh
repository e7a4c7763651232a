#!/usr/bin/env bash
# The README's first command: installs what the example needs when it is missing (bubblewrap for
# isolation, a C compiler and make for the task), then runs polymorph with search on matmul-c.
# Extra arguments go to `polymorph run` (e.g. --budget 20).
set -euo pipefail
cd "$(dirname "$0")"
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v cc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
if [ ${#need[@]} -gt 0 ]; then
    as_root=()
    [ "$(id -u)" = 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" apt-get install -y -qq "${need[@]}"
fi
exec cargo run --release -- run tasks/matmul-c "$@"
