#!/usr/bin/env bash
# scripts/make-deb.sh   (run by `make deb`, after `make dist`)
#
# Builds $OUT/spinet_VERSION-1_ARCH.deb with dpkg-deb: the files of
# `make install PREFIX=/usr` (zsh completion in Debian's vendor directory,
# man pages and changelog compressed as Debian policy asks), the copyright
# and changelog from packaging/debian/, and a control file whose Depends
# dpkg-shlibdeps computes from the binary (libfluidsynth3, libasound2,
# libsndfile1, and the C and C++ runtime; the Swift runtime is linked in).
# Prints the path of the package.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VERSION=${VERSION:?VERSION is set by make deb}
OUT=${OUT:-out}
DEBVERSION=$VERSION-1
ARCH=$(dpkg --print-architecture)
MAINTAINER=${DEB_MAINTAINER:-$(sed -n 's/^ -- \(.*>\)  .*/\1/p' packaging/debian/changelog | head -1)}

top=$(sed -n '1s/^spinet (\(.*\)) .*/\1/p' packaging/debian/changelog)
[[ $top == "$DEBVERSION" ]] || {
  echo "make-deb: packaging/debian/changelog starts at $top, not $DEBVERSION: add an entry for this version" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/spinet
# make deb has just made the pages and completions: install builds nothing.
make -s install DESTDIR="$stage" PREFIX=/usr ZSHCOMPDIR=/usr/share/zsh/vendor-completions >/dev/null

doc=$stage/usr/share/doc/spinet
gzip -9n "$stage"/usr/share/man/man1/*.1
install -m 644 packaging/debian/copyright "$doc/copyright"
gzip -9nc packaging/debian/changelog > "$doc/changelog.Debian.gz"
chmod 644 "$doc/changelog.Debian.gz"

# Depends, from the libraries the binary links (a throw-away debian/control
# is all dpkg-shlibdeps needs).
mkdir -p "$work/src/debian"
printf 'Source: spinet\n\nPackage: spinet\nArchitecture: any\n' > "$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O "$stage/usr/bin/spinet" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
for lib in libfluidsynth3 libasound2 libsndfile1; do
  [[ $depends == *"$lib"* ]] || { echo "make-deb: dpkg-shlibdeps found no $lib in: $depends" >&2; exit 1; }
done

size=$(du -sk --apparent-size "$stage" | cut -f1)
mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<EOF
Package: spinet
Version: $DEBVERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $size
Depends: $depends
Suggests: fluid-soundfont-gm
Section: sound
Priority: optional
Description: MIDI software synthesizer for live playing and fast renders
 Spinet plays MIDI live from keyboards and DAWs over the ALSA sequencer,
 with a low, constant latency, and renders Standard MIDI Files to WAV,
 FLAC, Ogg, AIFF or MP3, fast and byte for byte reproducibly. It plays
 SoundFonts (.sf2/.sf3, through libfluidsynth) and its own oscillator
 synth, through a shared reverb, chorus and tempo-synced delay.
 .
 This package includes a General MIDI SoundFont (public domain), man
 pages, bash, zsh and fish completions, and a systemd user unit that runs
 Spinet as a sound module (systemctl --user enable --now spinet).
EOF
(cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
chmod 644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"

mkdir -p "$OUT"
deb=$OUT/spinet_${DEBVERSION}_$ARCH.deb
# Files dated at the last commit, so the same source gives the same package.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
