#!/usr/bin/env bash
# Installs every Debian package attnc's build and tests need, and checks for
# the CUDA Toolkit. Idempotent: installs only what is missing; uses sudo when
# not root. Both quick-start commands run it.
#
#   scripts/setup.sh --libfuzzer   also clang-22 and its runtime libraries, for
#                                  the libFuzzer build of tests/fuzz
#                                  (README.md, "Fuzzing")
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache git python3 python3-pip
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libzstd-dev zlib1g-dev libedit-dev libxml2-dev libcurl4-openssl-dev
  catch2 libcli11-dev libfmt-dev clang-format-22 nlohmann-json3-dev libxxhash-dev
)
if [ "${1:-}" = --libfuzzer ]; then
  packages+=(clang-22 libclang-rt-22-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
      echo "setup: need root or sudo to install: ${missing[*]}" >&2
      exit 1
    }
    sudo=sudo
  fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda=${ATTNC_CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda/bin/ptxas" ] || [ ! -f "$cuda/include/cuda.h" ]; then
  cat >&2 <<MSG
setup: error: the CUDA Toolkit 13.0 was not found at $cuda
  attnc needs its ptxas (to validate emitted PTX), cuda.h and NVRTC headers.
  Install the CUDA Toolkit 13.0 (NVIDIA's cuda-toolkit-13-0 package) so that
  $cuda/bin/ptxas exists, or set ATTNC_CUDA_HOME to where it is installed.
MSG
  exit 1
fi
ver=$("$cuda/bin/ptxas" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
case "$ver" in
  13.*) ;;
  *) echo "setup: warning: CUDA Toolkit $ver at $cuda; attnc is tested with 13.0" >&2 ;;
esac

# Python-side tests need numpy (PyPI).
if ! python3 -c "import numpy" 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check numpy ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages numpy
fi
# The SASS check (ctest ptxas-sass-uniform-loop) needs nvdisasm, which the
# minimal CUDA Toolkit lacks; NVIDIA publishes it on PyPI (6 MB). Best effort:
# without it that test reports itself skipped.
# Found the way the test finds it (bench/sass_loops.py's find_nvdisasm).
have_nvdisasm() {
  python3 -c "import sys; sys.path.insert(0, '$(dirname "$0")/../bench'); import sass_loops; sys.exit(not sass_loops.find_nvdisasm(None, required=False))"
}
if ! have_nvdisasm; then
  python3 -m pip install --quiet --disable-pip-version-check nvidia-cuda-nvdisasm 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages \
      nvidia-cuda-nvdisasm 2>/dev/null ||
    echo "setup: warning: nvdisasm not installed (pip install nvidia-cuda-nvdisasm); the SASS check will be skipped" >&2
fi
echo "setup: ok (LLVM/MLIR 22, CUDA $ver at $cuda)"
