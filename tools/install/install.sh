#!/bin/sh
# make install: copies the built products into a prefix. Compiles nothing; every product must exist.
#   sh tools/install/install.sh DEST PREFIX BIN VERSION CUDA
# DEST is where the files go ($(DESTDIR)$(PREFIX)); PREFIX is where they will be found at run time
# (written into flashptx.pc); BIN holds the build's products; CUDA is the toolkit the library was
# built with (flashptx.h includes its cuda_runtime_api.h). Run from the repository root.
#
#   include/flashptx.h
#   lib/libflashptx.so.VERSION, lib/libflashptx.so.MAJOR -> it (the SONAME), lib/libflashptx.so -> that
#   lib/libflashptx.a
#   bin/flashptx
#   lib/cmake/flashptx/flashptxConfig.cmake, flashptxConfigVersion.cmake (target flashptx::flashptx)
#   lib/pkgconfig/flashptx.pc
#   share/doc/flashptx/LICENSE, README.md, CHANGELOG.md
set -eu
[ $# -eq 5 ] || { echo "usage: install.sh DEST PREFIX BIN VERSION CUDA" >&2; exit 2; }
dest=$1 prefix=$2 bin=$3 version=$4 cuda=$5
major=${version%%.*}
here=tools/install

for f in include/flashptx.h "$bin/libflashptx.so" "$bin/libflashptx.a" "$bin/flashptx" LICENSE README.md CHANGELOG.md \
         "$here/flashptxConfig.cmake.in" "$here/flashptxConfigVersion.cmake.in" "$here/flashptx.pc.in"; do
  [ -f "$f" ] || { echo "install: $f is missing (run make at the repository root first)" >&2; exit 1; }
done
case $prefix in /*) ;; *) echo "install: PREFIX must be an absolute path, not '$prefix'" >&2; exit 1 ;; esac

subst() {  # template -> file, @VERSION@ @MAJOR@ @PREFIX@ @CUDA@ replaced
  sed -e "s|@VERSION@|$version|g" -e "s|@MAJOR@|$major|g" -e "s|@PREFIX@|$prefix|g" -e "s|@CUDA@|$cuda|g" "$1" > "$2"
  chmod 644 "$2"
}

mkdir -p "$dest/include" "$dest/lib/cmake/flashptx" "$dest/lib/pkgconfig" "$dest/bin" "$dest/share/doc/flashptx"
install -m 644 include/flashptx.h "$dest/include/flashptx.h"
install -m 755 "$bin/libflashptx.so" "$dest/lib/libflashptx.so.$version"
ln -sf "libflashptx.so.$version" "$dest/lib/libflashptx.so.$major"
ln -sf "libflashptx.so.$major" "$dest/lib/libflashptx.so"
install -m 644 "$bin/libflashptx.a" "$dest/lib/libflashptx.a"
install -m 755 "$bin/flashptx" "$dest/bin/flashptx"
subst "$here/flashptxConfig.cmake.in" "$dest/lib/cmake/flashptx/flashptxConfig.cmake"
subst "$here/flashptxConfigVersion.cmake.in" "$dest/lib/cmake/flashptx/flashptxConfigVersion.cmake"
subst "$here/flashptx.pc.in" "$dest/lib/pkgconfig/flashptx.pc"
for f in LICENSE README.md CHANGELOG.md; do install -m 644 "$f" "$dest/share/doc/flashptx/$f"; done
echo "install: flashptx $version in $dest"
