#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages Spinet builds and runs with, only when
# one is missing (idempotent; nothing is fetched from outside the
# distribution's package archive). Extra package names may be passed, e.g.
# `scripts/install-deps.sh fluidsynth` for the benchmark's peer.
set -euo pipefail
packages=(libasound2-dev libfluidsynth-dev libsndfile1-dev libebur128-dev libjack-jackd2-dev jackd2 pkg-config "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
echo "spinet: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) != 0 ]]; then
  command -v sudo >/dev/null || { echo "spinet: run as root or install sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
