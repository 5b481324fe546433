#!/usr/bin/env bash
# scripts/generate-dist.sh DIR
#
# Generates what `make install` and `make deb` install beside the binary,
# from the release build's own help, so neither can drift from its options:
#   DIR/man/spinet.1, spinet-render.1, spinet-play.1, spinet-ports.1,
#     spinet-bench.1   swift-argument-parser's generate-manual (below)
#   DIR/completions/spinet.bash, _spinet, spinet.fish
#                      spinet --generate-completion-script bash|zsh|fish
# Nothing generated is committed. Run after the release build (`make dist`).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
DIST=${1:-.build/dist}
SWIFT=${SWIFT:-swift}
BIN=.build/release/spinet
[[ -x $BIN ]] || { echo "generate-dist: no $BIN (run make release)" >&2; exit 1; }

rm -rf "$DIST/man" "$DIST/completions"
mkdir -p "$DIST/man" "$DIST/completions"

# The date in the pages is the last commit's, so the same source gives the
# same pages (a reproducible .deb); today's outside a git checkout.
date=$(git log -1 --format=%cs 2>/dev/null || date -u +%F)

# generate-manual is the tool swift-argument-parser's generate-manual
# plugin runs (`swift package generate-manual`): it reads the built
# command's own help (--experimental-dump-help). The plugin itself is not
# used because it rebuilds the package with `swift package`'s flags, which
# cannot say --static-swift-stdlib: it would relink .build/release/spinet
# with the toolchain's shared runtime. The tool is built once, from the
# resolved checkout, into .build/generate-manual (about a minute).
GM=.build/generate-manual/debug/generate-manual
if [[ ! -x $GM ]]; then
  checkout=.build/checkouts/swift-argument-parser
  [[ -f $checkout/Package.swift ]] || "$SWIFT" package resolve
  "$SWIFT" build --package-path "$checkout" --scratch-path .build/generate-manual --product generate-manual >&2 || {
    echo "generate-dist: building generate-manual failed" >&2; exit 1; }
fi
pages=$(mktemp -d)
trap 'rm -rf "$pages"' EXIT
"$GM" "$BIN" --multi-page --section 1 --date "$date" --authors "the Spinet developers" --output-directory "$pages"
for page in spinet spinet-render spinet-play spinet-ports spinet-bench; do
  # generate-manual names a subcommand's page spinet.render(1); the pages
  # here are spinet-render(1), as git's and FluidSynth's are. The help
  # subcommand's page is left out (spinet help X is spinet X --help), and a
  # blank line in a discussion becomes a paragraph break (mdoc warns). Its
  # NAME is spinet-render (what whatis, apropos and lintian expect), its
  # SYNOPSIS the command as typed, spinet render. The one-line description
  # loses its quotes, which whatis would show.
  src=$pages/${page/-/.}.1
  [[ -f $src ]] || { ls "$pages" >&2; echo "generate-dist: no page for $page" >&2; exit 1; }
  sed -e 's/^$/.Pp/' \
      -e '/^\.Sh NAME$/,/^\.Sh SYNOPSIS$/s/^\.Nm "spinet \([a-z]*\)"$/.Nm spinet-\1/' \
      -e 's/^\.Nd "\(.*\)"$/.Nd \1/' \
      -e '/^\.Sh SYNOPSIS$/{n;s/^\.Nm$/.Nm "'"${page/-/ }"'"/;}' \
      -e '/^\.Xr spinet\.help 1/d' \
      -e 's/^\.Xr spinet\.\([a-z]*\) 1/.Xr spinet-\1 1/' \
      -e 's/^\.Dt SPINET\.\([A-Z]*\) /.Dt SPINET-\1 /' \
      "$src" > "$DIST/man/$page.1"
done

# Sourced, not run: no #! line (lintian's bash-completion-with-hashbang).
"$BIN" --generate-completion-script bash | sed '1{/^#!/d}' > "$DIST/completions/spinet.bash"
"$BIN" --generate-completion-script zsh > "$DIST/completions/_spinet"
"$BIN" --generate-completion-script fish > "$DIST/completions/spinet.fish"
echo "generate-dist: man pages and completions in $DIST"
