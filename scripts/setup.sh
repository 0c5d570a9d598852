#!/usr/bin/env bash
# Installs what building and testing rocl needs on Debian 12 (apt-get).
# Safe to run again: does nothing when everything is already there.
set -euo pipefail
case ${1:-} in
-h | --help)
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 0
  ;;
?*)
  echo "setup.sh: unexpected argument '$1': it takes none (see scripts/setup.sh --help)" >&2
  exit 2
  ;;
esac

packages=(
  cmake ninja-build g++ pkg-config git    # build
  libgtest-dev libgmock-dev               # tests
  libbenchmark-dev                        # micro-benchmarks
  libssl-dev                              # HMAC for the job secret
  clang-14 libclang-rt-14-dev             # libFuzzer targets
  clang-format clang-tidy cmake-format    # .ci/run's format and tidy checks
  dpkg-dev                                # cpack -G DEB: dpkg-shlibdeps
  iproute2 procps                         # multi-process and namespace tests
  iperf3 sockperf                         # the bare TCP path's standard tools (bench/hosts)
  openssh-server openssh-client           # roclrun's ssh launcher, tested inside the test hosts
  slurm-wlm munge libpmix-dev             # srun --mpi=pmix and PMIx (tests/slurm, src/bootstrap)
  pvm pvm-dev pvm-examples                # layers/pvm: PVM's examples and reference outputs
  openmpi-bin libopenmpi-dev mpich libmpich-dev   # anchors of rocl-bench compare: MPI,
  libucx-dev ucx-utils                    # the ucx transport; ucx_perftest
  libzmq3-dev libnng-dev gnuplot-nox      # ZeroMQ, NNG (anchors); the plots
  python3 universal-ctags                 # check-layers.py, check-class-size.py, tidy.sh
  libboost-context-dev libturbojpeg0-dev libfftw3-dev  # NCS's user threads, its JPEG and FFT examples
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
# No service may start while installing (openssh-server would start an
# sshd on the machine's interfaces; the tests start their own inside the
# test hosts): policy-rc.d says no, for this install only.
policy=/usr/sbin/policy-rc.d
made_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod 755 "$policy"
  made_policy=1
  trap '$sudo rm -f "$policy"' EXIT
fi
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
if [ -n "$made_policy" ]; then $sudo rm -f "$policy"; fi
