#!/usr/bin/env bash
# make release: static specgate binaries for linux and darwin (amd64,
# arm64) and windows amd64 in dist/, each archived with LICENSE and
# README.md, and dist/SHA256SUMS (check with: cd dist && sha256sum -c SHA256SUMS).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
TARGETS=${TARGETS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"}

command -v zip >/dev/null || { echo "release: zip is needed for the windows archive (apt-get install zip)" >&2; exit 1; }
rm -rf dist
mkdir -p dist
for t in $TARGETS; do
  os=${t%/*} arch=${t#*/}
  name="specgate_${VERSION}_${os}_${arch}"
  dir="dist/$name"
  mkdir -p "$dir"
  exe=specgate
  [ "$os" = windows ] && exe=specgate.exe
  # Static (no cgo), reproducible paths, the version stamped in.
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath \
    -ldflags "-s -w -X main.version=$VERSION" -o "$dir/$exe" ./cmd/specgate
  cp LICENSE README.md "$dir/"
  if [ "$os" = windows ]; then
    (cd dist && zip -qr "$name.zip" "$name")
  else
    tar -C dist -czf "dist/$name.tar.gz" "$name"
  fi
  rm -rf "$dir"
  echo "dist/$name"
done
(cd dist && sha256sum -- *.tar.gz *.zip > SHA256SUMS && sha256sum -c --quiet SHA256SUMS)
echo "dist/SHA256SUMS verifies"
