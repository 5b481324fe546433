#!/usr/bin/env bash
# scripts/player-jitter.sh [PERIOD...]: Spinet's file player beside
# FluidSynth's (`fluidsynth -a jack`) on a private dummy jackd (-S, no
# real-time scheduling), the same font and file: 40 claves 250 ms apart,
# recorded with jack_rec; prints each player's onset deviation from the
# file's times (standard deviation, spread, worst) per period size
# (default 256 and 1024 frames). A measurement, not a test: docs/playing.md.
# Needs jackd, jack_rec (jackd2, jack-tools) and fluidsynth; runs
# .build/release/spinet (or SPINET_BIN) with the bundled font.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${SPINET_BIN:-$ROOT/.build/release/spinet}
SF=${SPINET_SOUNDFONT:-$ROOT/SoundFonts/sf_GMbank.sf2}
HERE=$ROOT/scripts/player-jitter
for tool in jackd jack_rec jack_lsp fluidsynth python3; do
  command -v $tool >/dev/null || { echo "player-jitter: $tool is missing (apt-get install jackd2 jack-tools fluidsynth)" >&2; exit 2; }
done
[[ -x $BIN ]] || { echo "player-jitter: no spinet at $BIN (make release, or set SPINET_BIN)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/spinet-player-jitter.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
python3 "$HERE/jitter.py" write "$WORK/claves.mid"
export JACK_DEFAULT_SERVER=spinet-jitter-$$ JACK_NO_AUDIO_RESERVATION=1
periods=("$@")
((${#periods[@]})) || periods=(256 1024)
for period in "${periods[@]}"; do
  for who in spinet fluidsynth; do
    jackd -n "$JACK_DEFAULT_SERVER" --no-realtime -S -d dummy -r 48000 -p "$period" > "$WORK/jackd.log" 2>&1 & server=$!
    for _ in $(seq 100); do jack_lsp 2>/dev/null | grep -qx system:playback_1 && break; sleep 0.1; done
    if [[ $who == fluidsynth ]]; then
      fluidsynth -ni -a jack -o audio.jack.id=fsjitter -o audio.jack.autoconnect=0 -r 48000 -g 0.6 "$SF" "$WORK/claves.mid" > "$WORK/player.log" 2>&1 & player=$!
      ports=(fsjitter:left fsjitter:right)
    else
      "$BIN" play --driver jack --jack-connect none --dry --soundfont "$SF" "$WORK/claves.mid" > "$WORK/player.log" 2>&1 & player=$!
      ports=(Spinet:out_L Spinet:out_R)
    fi
    for _ in $(seq 100); do jack_lsp 2>/dev/null | grep -qx "${ports[0]}" && break; sleep 0.05; done
    timeout 30 jack_rec -f "$WORK/$who.wav" -d 14 -b 32 "${ports[@]}" > "$WORK/rec.log" 2>&1 || true
    wait $player || true
    kill $server; wait $server || true
    echo "period $period, $who: $(python3 "$HERE/jitter.py" measure "$WORK/$who.wav")"
  done
done
