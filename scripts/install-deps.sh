#!/usr/bin/env bash
# Installs every Debian 12 package collscope needs to build, test and run (nothing comes from elsewhere).
# The CUDA toolkit (NCCL, CUPTI, NVTX headers) is optional and not a Debian package: when present in
# /usr/local/cuda it is used; without it the GPU capture parts are skipped with a message.
set -euo pipefail
packages=(
  build-essential cmake ccache pkg-config git
  libsqlite3-dev sqlite3 libfmt-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libeigen3-dev libnlopt-cxx-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  openmpi-bin libopenmpi-dev
  mpich libmpich-dev gfortran python3-mpi4py
  hpcc  # HPC Challenge: a real MPI program the tests trace (tests/data/hpcc)
  qt6-base-dev xvfb xauth
  chromium  # renders the HTML reports in the tests (headless)
  libopen-trace-format2-dev otf2-tools  # OTF2 export (found by pkg-config); otf2-print reads it back in the tests
  python3 python3-torch
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "collscope: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
