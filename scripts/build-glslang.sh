#!/usr/bin/env bash
# Builds glslang VERSION, static, into PREFIX: its source tarball comes through apt-get from the next
# Debian release's source index, at the archive this machine's own apt configuration names (no host is
# written here), and must match SHA256. Progress goes to stdout, the tools' output to PREFIX.log.
# usage: build-glslang.sh PREFIX VERSION SHA256
set -euo pipefail
prefix=$(realpath -m "$1") version=$2 sha256=$3
release=trixie # Debian 13: its glslang (15) compiles GL_NV_cooperative_matrix2
log=$prefix.log
mkdir -p "$(dirname "$prefix")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: >"$log"

# The main archive of this machine's release, as apt already uses it.
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
uri=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' | awk -v c="$codename" '$2 == c {print $1; exit}')
if [ -z "$uri" ]; then
  echo "build-glslang: this machine's apt configuration has no source for $codename" >&2
  exit 1
fi

echo "  fetching glslang $version's source ($release, through apt-get)"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/dl" "$work/src"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $release main" >"$work/sources.list"
apt=(apt-get -qq -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
"${apt[@]}" update >>"$log" 2>&1
(cd "$work/dl" && "${apt[@]}" source --download-only glslang) >>"$log" 2>&1
# Any Debian revision of this upstream version ships the same tarball; another version fails the check.
tarball=$work/dl/glslang_$version.orig.tar.gz
echo "$sha256  $tarball" | sha256sum -c --quiet -
tar -xzf "$tarball" -C "$work/src" --strip-components=1

echo "  configuring"
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DENABLE_OPT=OFF -DENABLE_HLSL=OFF \
  -DGLSLANG_TESTS=OFF -DBUILD_SHARED_LIBS=OFF -DENABLE_GLSLANG_BINARIES=OFF \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_INSTALL_PREFIX="$prefix" >>"$log" 2>&1
echo "  compiling on $(nproc) cores"
# make prints "[ 42%] Building ..." lines: show each new percentage on one line.
cmake --build "$work/build" -j "$(nproc)" 2>&1 | tee -a "$log" |
  awk 'match($0, /^\[ *[0-9]+%\]/) { p = substr($0, RSTART, RLENGTH); if (p != last) { printf "\r  %s", p; fflush(); last = p } }
       END { print "" }'
cmake --install "$work/build" >>"$log" 2>&1
