#!/usr/bin/env bash
# Downloads the published packages whose compute kernels the corpus tests run
# (tests/suite/corpus/packages.tsv: registry, name, version, pinned sha256) into .corpus/
# (ignored by git), checks each file against its pinned sha256 and unpacks it to
# .corpus/NAME-VERSION/. A package already unpacked and checked is kept. Set
# UNICOMPUTE_CORPUS_DIR to use another folder (the tests read the same variable).
# Nothing of these packages is committed: the tests read the kernels from here.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${UNICOMPUTE_CORPUS_DIR:-$PWD/.corpus}"
mkdir -p "$dir"
grep -v '^#' tests/suite/corpus/packages.tsv |
while IFS=$'\t' read -r registry name version sha256 _; do
    [ -n "$registry" ] || continue
    dest="$dir/$name-$version"
    if [ -e "$dest/.verified" ] && [ "$(cat "$dest/.verified")" = "$sha256" ]; then
        continue
    fi
    case "$registry" in
        crates) url="https://static.crates.io/crates/$name/$name-$version.crate" ;;
        *) echo "corpus: unknown registry '$registry' for $name" >&2; exit 1 ;;
    esac
    echo "== corpus: downloading $name $version ($registry)"
    tmp="$(mktemp)"
    trap 'rm -f "$tmp"' EXIT
    curl -fsSL --retry 3 -o "$tmp" "$url"
    got="$(sha256sum "$tmp" | cut -d' ' -f1)"
    if [ "$got" != "$sha256" ]; then
        echo "corpus: $name $version has sha256 $got, but packages.tsv pins $sha256" >&2
        exit 1
    fi
    rm -rf "$dest" "$dir/.unpack"
    mkdir -p "$dir/.unpack"
    tar -xzf "$tmp" -C "$dir/.unpack"
    mv "$dir/.unpack/$name-$version" "$dest"
    rm -rf "$dir/.unpack" "$tmp"
    echo "$sha256" > "$dest/.verified"
done
