#!/usr/bin/env bash
# Builds the CLAP plugin .build/plugins/spinet.clap (with the default
# SoundFont beside it, .build/plugins/SoundFonts/sf_GMbank.sf2, where the
# plugin looks first) and the headless test host .build/plugins/clap-host
# (Tests/PluginHosts/clap-host.c, with the real-time probe compiled in).
#
# The library is a release build with the Swift runtime linked in
# (-static-stdlib: --static-swift-stdlib is ignored for dynamic libraries),
# in the plugins' own scratch path so that the main release build's flags
# stay as they are (the LV2 build shares it: same flags, other product).
# Only clap_entry and GOMP_parallel are exported (Sources/SpinetCLAP/spinet_clap.map).
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
scratch=.build/plugin-build
# Makes the plugin libraries products of the package (see Package.swift).
export SPINET_BUILD_PLUGINS=1
out=.build/plugins

"$SWIFT" build -c release -Xswiftc -static-stdlib --scratch-path "$scratch" --product spinet_clap >&2
lib="$("$SWIFT" build -c release -Xswiftc -static-stdlib --scratch-path "$scratch" --show-bin-path)/libspinet_clap.so"

mkdir -p "$out/SoundFonts"
cp "$lib" "$out/spinet.clap.tmp"
mv "$out/spinet.clap.tmp" "$out/spinet.clap"
cp SoundFonts/sf_GMbank.sf2 "$out/SoundFonts/sf_GMbank.sf2.tmp"
mv "$out/SoundFonts/sf_GMbank.sf2.tmp" "$out/SoundFonts/sf_GMbank.sf2"

# No library of the Swift toolchain may be needed at run time.
if ldd "$out/spinet.clap" | grep -Ei 'swift|libFoundation|libdispatch|BlocksRuntime'; then
  echo "build-clap: the plugin needs a Swift toolchain library (above)" >&2
  exit 1
fi
# Nothing unresolved inside the plugin (a shared library links with
# undefined symbols, which would only fail in a host's dlopen).
undefined=$(ldd -r "$out/spinet.clap" 2>&1 | grep -i 'undefined symbol' || true)
if [[ -n "$undefined" ]]; then
  echo "build-clap: unresolved symbols in the plugin:" >&2
  echo "$undefined" | head -20 >&2
  exit 1
fi
# Exactly the two symbols of spinet_clap.map are exported.
exported=$(nm -D --defined-only "$out/spinet.clap" | awk '$2 ~ /^[TDBRVWi]$/ {print $3}' | sed 's/@.*//' | sort -u | tr '\n' ' ')
if [[ "$exported" != "GOMP_parallel clap_entry " ]]; then
  echo "build-clap: unexpected exported symbols: $exported" >&2
  exit 1
fi

# Bound at load (no lazy binding on the audio thread) and never unmapped by dlclose.
if ! readelf -d "$out/spinet.clap" | grep -q 'FLAGS_1.*NOW.*NODELETE'; then
  echo "build-clap: the plugin is not linked with -z now -z nodelete" >&2
  exit 1
fi

# The headless host of the tests, with the real-time probe interposed.
cc -std=gnu11 -O2 -Wall -Wextra -o "$out/clap-host" \
  -I Sources/CCLAP/include -I Sources/SpinetCLAP/include -I Tests/CRealtimeProbe/include \
  Tests/PluginHosts/clap-host.c Tests/CRealtimeProbe/probe.c -lpthread -ldl -lm

echo "build-clap: $out/spinet.clap ($(du -h "$out/spinet.clap" | cut -f1))" >&2
