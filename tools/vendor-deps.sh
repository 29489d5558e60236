#!/usr/bin/env bash
# Copies the header-only dependencies from this Debian machine into third_party/include (an
# ignored folder) so the tree builds on a machine with a compiler and CMake but no packages
# (the GPU device machine): configure there with -DINFER_PLAN_VENDORED_DEPS=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
dst=third_party/include
rm -rf third_party
mkdir -p "$dst"
cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/doctest /usr/include/fmt "$dst/"
mkdir -p "$dst/eigen3"
cp -r /usr/include/eigen3/Eigen "$dst/eigen3/"
du -sh third_party
