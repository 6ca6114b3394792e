#!/usr/bin/env bash
# Runs every fuzz test of the project for a short while each: scripts/fuzz.sh [DURATION]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-20s}"
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for fn in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $fn ($fuzztime)"
    go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" "$pkg"
  done
done
