#!/usr/bin/env bash
# Writes the release bundle of the commit checked out (HEAD):
#   dist/jfr-native-VERSION-linux-x86_64.tar.gz         bin/jfrnative, bin/jfr-symbolize,
#                                                       lib/libjfrnative.so, README.md, LICENSE,
#                                                       THIRD-PARTY-LICENSES.txt
#   dist/jfr-native-VERSION-linux-x86_64.tar.gz.sha256  (sha256sum's format)
# VERSION is the workspace's (Cargo.toml). The binaries are the portable build
# (build-portable.sh: glibc 2.17 and later), the third-party licences cargo-about's
# (tools/release/about.toml, about.hbs).
#
# Reproducible: the same commit gives the same bytes, in any clone. What is built is the
# commit's tree (`git archive`), not the work tree: edits not committed are left out (and said
# so). The commit is named to `--version` through JFRNATIVE_COMMIT (tools/build.rs); the files'
# times in the archive are the commit's; owners are 0; names are sorted; gzip stores no name or
# time.
#
# Installs cargo-about from crates.io if it is missing (about 7 minutes, once).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

version=$(sed -n '/^\[workspace\.package\]/,/^\[/s/^version *= *"\(.*\)"$/\1/p' Cargo.toml)
[ -n "$version" ] || { echo "release: no version in Cargo.toml's [workspace.package]" >&2; exit 1; }
commit=$(git rev-parse --short=12 HEAD)
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD)
export SOURCE_DATE_EPOCH
name=jfr-native-$version-linux-x86_64
about_version=0.9.3
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "release: the work tree has changes that are not committed; the bundle is of $commit" >&2
fi

export PATH=${CARGO_HOME:-$HOME/.cargo}/bin:$PATH
# The version is pinned: another one may write THIRD-PARTY-LICENSES.txt otherwise.
if [ "$(cargo-about --version 2>/dev/null)" != "cargo-about $about_version" ]; then
    echo "release: installing cargo-about $about_version from crates.io" >&2
    cargo install -q --locked cargo-about --features cli --version "$about_version"
fi

# The commit's files, at a fixed place (so that the build directory stays warm: the archive's
# file times are the commit's, and Cargo sees nothing changed from one release of it to the
# next). Git must not find this repository above it: the tools' build script would call the
# tree "-dirty" and name the work tree's commit.
src=$root/target/release-src
rm -rf "$src"
mkdir -p "$src"
git archive --format=tar HEAD | tar -x -C "$src"
export GIT_CEILING_DIRECTORIES=$root/target
export JFRNATIVE_COMMIT=$commit

built=$root/target/release-out
PORTABLE_TARGET_DIR=$root/target/release-build PORTABLE_OUT=$built \
    bash "$src/tools/scripts/build-portable.sh"

stage=$root/target/release-stage
rm -rf "$stage"
mkdir -p "$stage/$name/bin" "$stage/$name/lib"
cp "$built/jfrnative" "$built/jfr-symbolize" "$stage/$name/bin/"
cp "$built/libjfrnative.so" "$stage/$name/lib/"
cp "$src/README.md" "$src/LICENSE" "$stage/$name/"
cargo about generate --frozen -m "$src/tools/Cargo.toml" -c "$src/tools/release/about.toml" \
    "$src/tools/release/about.hbs" -o "$stage/$name/THIRD-PARTY-LICENSES.txt" 2>"$stage/about.log" \
    || { cat "$stage/about.log" >&2; exit 1; }
# Modes fixed, whatever the umask.
find "$stage/$name" -type d -exec chmod 755 {} +
find "$stage/$name" -type f -exec chmod 644 {} +
chmod 755 "$stage/$name"/bin/* "$stage/$name"/lib/*

mkdir -p dist
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=gnu \
    -C "$stage" -cf - "$name" | gzip -n -9 >"dist/$name.tar.gz.tmp"
mv "dist/$name.tar.gz.tmp" "dist/$name.tar.gz"
(cd dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "release: dist/$name.tar.gz ($commit)" >&2
cat "dist/$name.tar.gz.sha256"
