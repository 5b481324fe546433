#!/usr/bin/env bash
# Spinet's LV2 plugin in a real host: jalv on a private dummy JACK server
# (scripts/jack-test-server.sh), fed by jack_midiseq (a JACK MIDI client
# looping notes) and recorded by jack_rec.
#
#   scripts/lv2-jalv-test.sh PLUGIN_DIR OUT.wav [SECONDS]
#
# PLUGIN_DIR holds spinet.lv2 (`make plugins-lv2`: .build/plugins). The
# loop is 48000 frames with middle C at frames 0 and 24000 (2000 frames
# each), the effect returns off; OUT.wav is the plugin's left output,
# 24-bit. Everything started here is stopped by pid on exit.
set -euo pipefail
plugins=$(cd "${1:?plugin dir}" && pwd)
out=${2:?output wav}
seconds=${3:-4}
here=$(cd "$(dirname "$0")" && pwd)
name=spinet-lv2-jalv
client=spinetlv2
work=$(mktemp -d)
jack_pid="" jalv_pid="" seq_pid=""
cleanup() {
  exec 4>&- 2>/dev/null || true
  [[ -n $seq_pid ]] && kill "$seq_pid" 2>/dev/null || true
  [[ -n $jalv_pid ]] && kill "$jalv_pid" 2>/dev/null || true
  [[ -n $seq_pid ]] && wait "$seq_pid" 2>/dev/null || true
  [[ -n $jalv_pid ]] && wait "$jalv_pid" 2>/dev/null || true
  [[ -n $jack_pid ]] && "$here/jack-test-server.sh" stop "$jack_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT

jack_pid=$("$here/jack-test-server.sh" start "$name" 48000 128)
export JACK_DEFAULT_SERVER=$name JACK_NO_AUDIO_RESERVATION=1

# LV2_PATH: the system schemas and a directory that holds only the bundle.
mkdir "$work/lv2"
ln -s "$plugins/spinet.lv2" "$work/lv2/spinet.lv2"
# jalv reads commands on stdin: a fifo held open keeps it running.
mkfifo "$work/stdin"
LV2_PATH=/usr/lib/lv2:$work/lv2 jalv -x -n "$client" -c reverb=0 -c chorus=0 -c delay=0 \
  https://spinet.dev/plugins/spinet <"$work/stdin" >"$work/jalv.log" 2>&1 &
jalv_pid=$!
exec 4>"$work/stdin"
for _ in $(seq 400); do
  jack_lsp 2>/dev/null | grep -qx "$client:out_l" && break
  kill -0 "$jalv_pid" 2>/dev/null || { cat "$work/jalv.log" >&2; echo "lv2-jalv-test: jalv exited" >&2; exit 1; }
  sleep 0.05
done
jack_lsp 2>/dev/null | grep -qx "$client:out_l" || { cat "$work/jalv.log" >&2; echo "lv2-jalv-test: no jalv ports" >&2; exit 1; }
jack_lsp | grep "^$client:" >&2

jack_midiseq spinetseq 48000 0 60 2000 24000 60 2000 >"$work/seq.log" 2>&1 &
seq_pid=$!
for _ in $(seq 200); do
  jack_lsp 2>/dev/null | grep -qx "spinetseq:out" && break
  sleep 0.05
done
jack_connect spinetseq:out "$client:control"
jack_rec -f "$out" -d "$seconds" -b 24 "$client:out_l" >"$work/rec.log" 2>&1 || { cat "$work/rec.log" >&2; exit 1; }
grep -i "error\|fail" "$work/jalv.log" >&2 || true
echo "lv2-jalv-test: recorded $out" >&2
