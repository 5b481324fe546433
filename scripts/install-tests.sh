#!/usr/bin/env bash
# scripts/install-tests.sh
#
# Spinet installed as a Linux program, checked as a user would find it.
# Run by `make test` after the release build (it builds nothing else but
# the man pages and completions, `make dist`), with the tools
# scripts/install-deps.sh installs for it (see INSTALL_TEST_DEPS in the
# Makefile). Nothing is installed on this machine: `make install` goes to a
# DESTDIR and the .deb is unpacked with dpkg -x, both in a temporary
# directory.
#   - make install DESTDIR=...: every file in place; the binary carries its
#     Swift runtime (no libswift*, no rpath); with the build tree and the
#     toolchain hidden (a private mount namespace) and a clean environment,
#     it renders the demo with the installed font, found by itself;
#     --version is the package's version
#   - the man pages: man -l renders each without a warning, and each lists
#     every option of its command's --help
#   - the bash completion loads in bash and completes `spinet ren` to render
#     (fish's too, and zsh's parses, where those shells are installed)
#   - the user unit: its command, run as systemd would, waits for a sound
#     card saying so once, or runs spinet play with $SPINET_OPTIONS; and
#     systemd-analyze verify accepts it (if systemd is here)
#   - make uninstall removes every file make install wrote
#   - odd paths (odd_path_tests below): PREFIX and DESTDIR with spaces,
#     quotes, %, \, ;, & and *: make install and the plugin installs put
#     every file there, the unit names the binary as systemd reads it, and
#     the uninstalls remove exactly those files (a file named like the
#     path's first word, /tmp/.../my beside "/tmp/.../my apps", survives)
#   - make deb: the expected files, Depends, version; lintian finds no
#     error; unpacked into a throw-away root, it renders the demo with its
#     own font
# Prints one line per check and `N passed, N failed`; exits 1 on a failure.
# `scripts/install-tests.sh paths` runs only the odd path checks (after a
# release build and `make dist`, which it does not run).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
MAKE=${MAKE:-make}
VERSION=$(sed -n 's/.*version: "\(.*\)".*/\1/p' Sources/spinet/Spinet.swift)
T=$(mktemp -d /tmp/spinet-install-tests.XXXXXX)
trap 'rm -rf "$T"' EXIT
passed=0 failed=0 skipped=0
start=$SECONDS

pass() { echo "ok    $1"; passed=$((passed + 1)); }
fail() { echo "FAIL  $1"; [[ -z ${2-} ]] || printf '%s\n' "$2" | sed 's/^/      /' | head -30; failed=$((failed + 1)); }
# The manual's pages as installed under DIR (DIR/docs/PAGE.md), one per line.
doc_pages() { local p; for p in docs/*.md; do printf '%s\n' "$1/docs/${p#docs/}"; done; }
skip() { echo "skip  $1"; skipped=$((skipped + 1)); }

# ---------------------------------------------------------------------------
# Odd paths: everything make writes or removes is quoted. `make uninstall
# PREFIX="/opt/my apps"` once ran `rm -f /opt/my apps/bin/spinet ...`,
# deleting an unrelated /opt/my; `uninstall-plugins-lv2` ran rm -rf on it.
# files_under DIR: the files below DIR, relative to it, sorted.
files_under() { (cd "$1" 2>/dev/null && find . -type f | sed 's|^\./||' | sort); }
odd_path_tests() {
  local X=$T/x prefix dest want got out
  mkdir -p "$X"
  want=$(printf '%s\n' bin/spinet share/spinet/SoundFonts/sf_GMbank.sf2 \
    share/man/man1/spinet{,-render,-play,-ports,-bench}.1 \
    share/bash-completion/completions/spinet share/zsh/site-functions/_spinet \
    share/fish/vendor_completions.d/spinet.fish lib/systemd/user/spinet.service \
    share/doc/spinet/README.md share/doc/spinet/SoundFonts.md $(doc_pages share/doc/spinet) | sort)
  # 1. PREFIX with a space, no DESTDIR; files named like its first word beside it.
  prefix="$X/my apps"
  echo unrelated >"$X/my"; mkdir -p "$X/apps"; echo unrelated >"$X/apps/bin"
  if ! out=$($MAKE -s install PREFIX="$prefix" 2>&1); then fail "odd paths: make install PREFIX=\"…/my apps\"" "$out"
  elif [[ $(files_under "$prefix") != "$want" ]]; then
    fail "odd paths: make install PREFIX=\"…/my apps\" puts every file there" "$(diff <(echo "$want") <(files_under "$prefix"))"
  else pass "odd paths: make install PREFIX=\"…/my apps\" puts the $(wc -l <<<"$want") files there"; fi
  out=$($MAKE -s uninstall PREFIX="$prefix" 2>&1)
  got=$(files_under "$prefix")
  if [[ -n $got ]]; then fail "odd paths: make uninstall PREFIX=\"…/my apps\" removes every installed file" "$out"$'\n'"$got"
  elif [[ $(cat "$X/my" 2>/dev/null) != unrelated || $(cat "$X/apps/bin" 2>/dev/null) != unrelated ]]; then
    fail "odd paths: make uninstall PREFIX=\"$X/my apps\" leaves $X/my and $X/apps/bin alone" "$out"
  else pass "odd paths: make uninstall PREFIX=\"…/my apps\" removes every installed file, and $X/my survives"; fi

  # 2. DESTDIR and PREFIX with quotes, %, \, ;, & and *.
  dest="$X/dest dir 'x'"; prefix="/opt/o'd \"q\" 100% a\\b;c&d *"
  echo unrelated >"$X/dest"
  if ! out=$($MAKE -s install DESTDIR="$dest" PREFIX="$prefix" 2>&1); then fail "odd paths: make install DESTDIR=… PREFIX=… (quotes, %, \\, ;, &, *)" "$out"
  elif [[ $(files_under "$dest$prefix") != "$want" ]]; then
    fail "odd paths: make install DESTDIR=… PREFIX=… puts every file there" "$(diff <(echo "$want") <(files_under "$dest$prefix"))"
  else pass "odd paths: make install DESTDIR=\"$dest\" PREFIX=\"$prefix\" puts the $(wc -l <<<"$want") files there"; fi
  local unit="$dest$prefix/lib/systemd/user/spinet.service"
  if [[ -f $unit ]] && command -v systemd-analyze >/dev/null; then
    # what systemd reads from the unit: the binary's path, whole
    out=$(SYSTEMD_LOG_LEVEL=debug systemd-analyze verify "$unit" 2>&1 | sed -n 's/^[[:space:]]*Environment: SPINET=//p')
    [[ $out == "$prefix/bin/spinet" ]] && pass "odd paths: systemd reads the unit's SPINET as the installed path" \
      || fail "odd paths: systemd reads the unit's SPINET as the installed path" "read: $out"
  fi
  out=$($MAKE -s uninstall DESTDIR="$dest" PREFIX="$prefix" 2>&1)
  got=$(files_under "$dest")
  [[ -z $got && $(cat "$X/dest" 2>/dev/null) == unrelated ]] && pass "odd paths: make uninstall DESTDIR=… PREFIX=… removes every installed file, nothing else" \
    || fail "odd paths: make uninstall DESTDIR=… PREFIX=… removes every installed file, nothing else" "$out"$'\n'"$got"

  # 3. The plugins (when built: make plugins), under the same odd names.
  local kind lib files
  for kind in lv2 clap; do
    if [[ $kind == lv2 ]]; then lib=.build/plugins/spinet.lv2/spinet_lv2.so; files=$'lib/lv2/spinet.lv2/SoundFonts/README.md\nlib/lv2/spinet.lv2/SoundFonts/sf_GMbank.sf2\nlib/lv2/spinet.lv2/manifest.ttl\nlib/lv2/spinet.lv2/spinet.ttl\nlib/lv2/spinet.lv2/spinet_lv2.so'
    else lib=.build/plugins/spinet.clap; files=$'lib/clap/Spinet/SoundFonts/sf_GMbank.sf2\nlib/clap/Spinet/spinet.clap'; fi
    if [[ ! -f $lib ]]; then skip "odd paths: the $kind plugin install (not built: make plugins)"; continue; fi
    prefix="$X/my apps"
    if ! out=$($MAKE -s install-plugins-$kind DESTDIR="$dest" PREFIX="$prefix" 2>&1); then fail "odd paths: make install-plugins-$kind" "$out"
    elif [[ $(files_under "$dest$prefix") != "$(sort <<<"$files")" ]]; then
      fail "odd paths: make install-plugins-$kind DESTDIR=… PREFIX=\"…/my apps\" puts every file there" "$(files_under "$dest$prefix")"
    else pass "odd paths: make install-plugins-$kind DESTDIR=… PREFIX=\"…/my apps\" puts the $(wc -l <<<"$files") files there"; fi
    out=$($MAKE -s uninstall-plugins-$kind DESTDIR="$dest" PREFIX="$prefix" 2>&1)
    got=$(files_under "$dest")
    [[ -z $got && $(cat "$X/my" 2>/dev/null) == unrelated && $(cat "$X/dest" 2>/dev/null) == unrelated ]] \
      && pass "odd paths: make uninstall-plugins-$kind removes every file it installed, nothing else" \
      || fail "odd paths: make uninstall-plugins-$kind removes every file it installed, nothing else" "$out"$'\n'"$got"
  done
}

if [[ ${1-} == paths ]]; then
  if [[ ! -x .build/release/spinet || ! -f .build/dist/man/spinet.1 ]]; then
    fail "odd paths: a release build and its man pages (run make dist first)"
  else
    odd_path_tests
  fi
  echo "$passed passed, $failed failed$( ((skipped)) && echo ", $skipped skipped")"
  ((failed == 0)); exit
fi

# The generated pages and completions (no-op build; the plugin runs once).
if ! out=$($MAKE -s dist 2>&1); then
  fail "make dist (man pages and completions)" "$out"
  echo "$passed passed, $failed failed"; exit 1
fi

# A copy of the demo outside the build tree, which is hidden below.
cp demo/spinet-demo.mid "$T/demo.mid"
TOOLCHAIN=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v "${SWIFT:-swift}")")")")")   # /opt/swift

# run_isolated BIN ARGS...: BIN with a clean environment, from /, with the
# build tree and the Swift toolchain hidden when a private mount namespace
# can be had (root, or user namespaces); says once when it cannot.
ISOLATE=()
if unshare -m --propagation private sh -c 'mount -t tmpfs none "$0"' "$ROOT" 2>/dev/null; then
  ISOLATE=(unshare -m --propagation private sh -c 'mount -t tmpfs none "$0" && mount -t tmpfs none "$1" && shift && cd / && exec "$@"' "$ROOT" "$TOOLCHAIN")
elif unshare -rm sh -c 'mount -t tmpfs none "$0"' "$ROOT" 2>/dev/null; then
  ISOLATE=(unshare -rm sh -c 'mount -t tmpfs none "$0" && mount -t tmpfs none "$1" && shift && cd / && exec "$@"' "$ROOT" "$TOOLCHAIN")
else
  echo "note  no private mount namespace here (unshare -m, or mount in it, refused): the build tree stays visible; the font path is still checked"
fi
run_isolated() {
  if ((${#ISOLATE[@]})); then env -i PATH=/usr/bin:/bin HOME="$T/home" "${ISOLATE[@]}" "$@"
  else (cd / && env -i PATH=/usr/bin:/bin HOME="$T/home" "$@"); fi
}
mkdir -p "$T/home"

# check_render NAME BIN FONT: renders the demo; the SoundFont line must name FONT.
check_render() {
  local name=$1 bin=$2 font=$3 wav=$T/render-$RANDOM.wav out
  if ! out=$(run_isolated "$bin" render "$T/demo.mid" -o "$wav" --force 2>&1); then
    fail "$name" "$out"; return
  fi
  if ! grep -q "SoundFont: $font" <<<"$out"; then
    fail "$name (the SoundFont line does not name $font)" "$out"; return
  fi
  [[ -s $wav ]] && [[ $(head -c 4 "$wav") == RIFF ]] || { fail "$name (no WAV written)" "$out"; return; }
  pass "$name"
}

# ---------------------------------------------------------------------------
# make install into a DESTDIR
D=$T/root
P=/usr/local
if ! out=$($MAKE -s install DESTDIR="$D" 2>&1); then
  fail "make install DESTDIR=..." "$out"
else
  expected=$(printf '%s\n' $P/bin/spinet $P/share/spinet/SoundFonts/sf_GMbank.sf2 \
    $P/share/man/man1/spinet{,-render,-play,-ports,-bench}.1 \
    $P/share/bash-completion/completions/spinet $P/share/zsh/site-functions/_spinet \
    $P/share/fish/vendor_completions.d/spinet.fish $P/lib/systemd/user/spinet.service \
    $P/share/doc/spinet/README.md $P/share/doc/spinet/SoundFonts.md $(doc_pages $P/share/doc/spinet) | sort)
  got=$(cd "$D" && find . -type f | sed 's|^\.||' | sort)
  if [[ $got == "$expected" ]]; then pass "make install: the $(wc -l <<<"$got") files in place under $P"
  else fail "make install: the files installed" "$(diff <(echo "$expected") <(echo "$got"))"; fi
fi
BIN=$D$P/bin/spinet

if [[ -x $BIN ]]; then
  libs=$(ldd "$BIN" 2>&1); dyn=$(readelf -d "$BIN" 2>&1)
  if grep -qiE 'swift|not found|'"$TOOLCHAIN" <<<"$libs"; then fail "installed binary: no Swift runtime library, none missing" "$libs"
  elif grep -qE 'RPATH|RUNPATH' <<<"$dyn"; then fail "installed binary: no rpath" "$(grep -E 'RPATH|RUNPATH' <<<"$dyn")"
  else pass "installed binary: the Swift runtime linked in (ldd: $(grep -c '=>' <<<"$libs") system libraries), no rpath"; fi

  check_render "installed binary renders the demo with $P/share/spinet/SoundFonts (build tree and toolchain hidden, clean env)" \
    "$BIN" "$D$P/share/spinet/SoundFonts/sf_GMbank.sf2"

  v=$(run_isolated "$BIN" --version 2>&1)
  [[ $v == "$VERSION" ]] && pass "installed binary: --version is $VERSION" || fail "installed binary: --version is $VERSION" "$v"
fi

# ---------------------------------------------------------------------------
# Man pages: rendered without a warning, and every option of --help is there.
if command -v man >/dev/null; then
  for page in spinet spinet-render spinet-play spinet-ports spinet-bench; do
    f=$D$P/share/man/man1/$page.1
    [[ -f $f ]] || { fail "man page $page(1) installed"; continue; }
    text=$(MANWIDTH=80 man --warnings -l "$f" 2>"$T/man.err")
    if [[ -s $T/man.err ]]; then fail "man -l $page.1: no warnings" "$(cat "$T/man.err")"; continue; fi
    sub=${page#spinet}; sub=${sub#-}
    # The options of --help's OPTIONS section (not those its text mentions).
    opts=$("$BIN" $sub --help 2>&1 | grep -oE -- '^  (-[a-zA-Z], )?--[a-z][a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+' | sort -u)
    flat=$(tr -d '\n' <<<"$text" | sed 's/‐/-/g')
    missing=$(for o in $opts; do grep -qF -- "$o" <<<"$flat" || echo "$o"; done)
    if [[ -z $text ]]; then fail "man -l $page.1: renders"
    elif [[ -n $missing ]]; then fail "man page $page(1) lists every option of --help" "missing: $missing"
    else pass "man page $page(1): renders without warnings, lists its $(wc -w <<<"$opts") options"; fi
  done
else
  skip "man pages (man is not installed: scripts/install-deps.sh man-db groff-base)"
fi

# ---------------------------------------------------------------------------
# Completions
comp=$D$P/share/bash-completion/completions/spinet
if [[ -f $comp ]]; then
  # The way bash-completion loads it: sourced, then asked for `spinet ren<TAB>`.
  out=$(bash -c '
    [[ -f /usr/share/bash-completion/bash_completion ]] && . /usr/share/bash-completion/bash_completion
    . "$1" || exit 3
    spec=$(complete -p spinet) || exit 4
    fn=$(sed -n "s/.*-F \([^ ]*\).*/\1/p" <<<"$spec")
    PATH=$(dirname "$2"):$PATH
    COMP_WORDS=(spinet ren); COMP_CWORD=1; COMP_LINE="spinet ren"; COMP_POINT=${#COMP_LINE}
    "$fn" spinet ren spinet
    printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$BIN" 2>&1)
  [[ $out == render ]] && pass "bash completion: spinet ren<TAB> completes to render" \
    || fail "bash completion: spinet ren<TAB> completes to render" "$out"
else
  fail "bash completion installed"
fi
# zsh and fish, where they are installed (make test does not install them).
if command -v zsh >/dev/null; then
  out=$(zsh -n "$D$P/share/zsh/site-functions/_spinet" 2>&1) && pass "zsh completion: parses" || fail "zsh completion: parses" "$out"
fi
if command -v fish >/dev/null; then
  out=$(PATH=$(dirname "$BIN"):$PATH fish -c 'source $argv[1]; complete -C"spinet ren"' "$D$P/share/fish/vendor_completions.d/spinet.fish" 2>&1)
  [[ $(cut -f1 <<<"$out") == render ]] && pass "fish completion: spinet ren<TAB> completes to render" \
    || fail "fish completion: spinet ren<TAB> completes to render" "$out"
fi

# ---------------------------------------------------------------------------
# The systemd user unit: its paths, and systemd's own check.
unit=$D$P/lib/systemd/user/spinet.service
if [[ -f $unit ]]; then
  if grep -q '@' "$unit" || ! grep -q "^Environment=\"SPINET=$P/bin/spinet\"$" "$unit" \
      || ! grep -q "^ExecStart=.*until \"\$\$SPINET\" ports .*exec \"\$\$SPINET\" play \$\$SPINET_OPTIONS'$" "$unit"; then
    fail "user unit: waits for a card with $P/bin/spinet ports, then runs $P/bin/spinet play" "$(grep -n 'Exec\|SPINET=\|@' "$unit")"
  else
    pass "user unit: waits for a card with $P/bin/spinet ports, then runs $P/bin/spinet play"
  fi
  # Its command as systemd runs it ($$ is $, SPINET the installed binary), where spinet ports finds no card.
  cmd=$(sed -n "s|^ExecStart=/bin/sh -c '\(.*\)'$|\1|p" "$unit" | sed "s|\\$\\$|$|g")
  if "$BIN" ports >/dev/null 2>&1; then
    skip "user unit: waits for a sound card (this machine has one)"
  else
    out=$(SPINET=$BIN timeout 6 /bin/sh -c "$cmd" 2>&1)
    [[ $? == 124 && $out == "spinet: waiting for a sound card (spinet ports finds none)" ]] \
      && pass "user unit: with no sound card, says once that it waits, and waits" \
      || fail "user unit: with no sound card, says once that it waits, and waits" "$out"
  fi
  # ... and where it finds one (ports stood in for by true): spinet play, with SPINET_OPTIONS.
  printf '#!/bin/sh\n[ "$1" = ports ] && exit 0\nexec "%s" "$@"\n' "$BIN" >"$T/card-found"; chmod +x "$T/card-found"
  out=$(SPINET=$T/card-found SPINET_OPTIONS="--period 64 --help" timeout 10 /bin/sh -c "$cmd" 2>&1)
  [[ $out == *"USAGE: spinet play"* ]] && pass "user unit: with a sound card, runs spinet play \$SPINET_OPTIONS" \
    || fail "user unit: with a sound card, runs spinet play \$SPINET_OPTIONS" "$out"
  if command -v systemd-analyze >/dev/null; then
    # verify checks that the programs named exist, and the Documentation= pages,
    sed "s|$P/bin/spinet|$BIN|g" "$unit" > "$T/spinet.service"
    # which it looks up with man (here: the installed ones).
    out=$(MANPATH=$D$P/share/man SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$T/spinet.service" 2>&1)
    if [[ $? == 0 && -z $(grep -v -e 'Failed to .*bus' -e 'sd_bus' <<<"$out" | grep -i spinet) ]]; then
      pass "user unit: systemd-analyze verify accepts it"
    else
      fail "user unit: systemd-analyze verify accepts it" "$out"
    fi
  else
    skip "user unit: systemd-analyze verify (systemd is not installed here: it may not install in a container)"
  fi
else
  fail "user unit installed"
fi

# ---------------------------------------------------------------------------
# make uninstall: nothing left.
if out=$($MAKE -s uninstall DESTDIR="$D" 2>&1); then
  left=$(find "$D" -type f)
  [[ -z $left ]] && pass "make uninstall: every installed file removed" || fail "make uninstall: every installed file removed" "$left"
else
  fail "make uninstall" "$out"
fi

odd_path_tests

# ---------------------------------------------------------------------------
# The Debian package
if ! command -v dpkg-deb >/dev/null; then
  skip "the .deb (no dpkg-deb)"
elif ! deb=$($MAKE -s deb OUT="$T/deb" 2>&1 | tail -1) || [[ ! -f $deb ]]; then
  fail "make deb" "$deb"
else
  contents=$(dpkg-deb --contents "$deb" | awk '{print $NF}' | sed 's|^\./|/|' | grep -v '/$' | sort)
  want=$(printf '%s\n' /usr/bin/spinet /usr/share/spinet/SoundFonts/sf_GMbank.sf2 \
    /usr/share/man/man1/spinet{,-render,-play,-ports,-bench}.1.gz \
    /usr/share/bash-completion/completions/spinet /usr/share/zsh/vendor-completions/_spinet \
    /usr/share/fish/vendor_completions.d/spinet.fish /usr/lib/systemd/user/spinet.service \
    /usr/share/doc/spinet/{README.md,SoundFonts.md,copyright,changelog.Debian.gz} $(doc_pages /usr/share/doc/spinet) | sort)
  [[ $contents == "$want" ]] && pass "deb: dpkg-deb --contents shows the $(wc -l <<<"$want") expected files" \
    || fail "deb: dpkg-deb --contents shows the expected files" "$(diff <(echo "$want") <(echo "$contents"))"
  fields=$(dpkg-deb --field "$deb" Version Depends)
  if ! grep -q "^Version: $VERSION-1$" <<<"$fields"; then fail "deb: version $VERSION-1" "$fields"
  elif ! grep -q 'libfluidsynth3' <<<"$fields" || ! grep -q 'libasound2' <<<"$fields" || ! grep -q 'libsndfile1' <<<"$fields"; then
    fail "deb: Depends on libfluidsynth3, libasound2, libsndfile1" "$fields"
  else pass "deb: version $VERSION-1, $(grep Depends <<<"$fields")"; fi

  if command -v lintian >/dev/null; then
    lint=$(lintian --fail-on error --no-tag-display-limit "$deb" 2>&1); status=$?
    errors=$(grep -c '^E:' <<<"$lint"); warnings=$(grep -c '^W:' <<<"$lint")
    if [[ $status == 0 && $errors == 0 ]]; then
      tags=$(grep '^W:' <<<"$lint" | cut -d' ' -f3 | sort -u | paste -sd' ')
      pass "deb: lintian, no errors (warnings: ${tags:-none})"
    else
      fail "deb: lintian, no errors" "$lint"
    fi
  else
    skip "deb: lintian (not installed)"
  fi

  X=$T/x
  if dpkg -x "$deb" "$X"; then
    check_render "deb unpacked with dpkg -x: renders the demo with its own font" \
      "$X/usr/bin/spinet" "$X/usr/share/spinet/SoundFonts/sf_GMbank.sf2"
  else
    fail "deb: dpkg -x"
  fi
fi

echo "install tests: $((SECONDS - start)) s"
echo "$passed passed, $failed failed$( ((skipped)) && echo ", $skipped skipped")"
((failed == 0))
