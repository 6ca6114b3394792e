#!/usr/bin/env bash
# bench.sh runs the benchmarks behind docs/performance.md's figures and
# writes everything to ./bench.out. The startup benchmarks (./bench/) skip
# when ../shared/specs is absent; each spawns the real binary, so they run
# once per benchmark (BENCHTIME=1x, raise it for steadier figures).
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
BENCHTIME=${BENCHTIME:-1x}
OUT=${OUT:-bench.out}

{
	echo "# specgate benchmarks, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "# $($GO version); $(nproc) CPUs; load:$(uptime | sed 's/.*load average//')"
	echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
} | tee "$OUT"

$GO build -o bin/specgate ./cmd/specgate

echo "## startup, memory and context (./bench/)" | tee -a "$OUT"
$GO test -run '^$' -bench . -benchtime="$BENCHTIME" -timeout 20m ./bench/ 2>&1 | tee -a "$OUT"

echo "## micro benchmarks" | tee -a "$OUT"
$GO test -run '^$' -bench . -benchmem -timeout 10m \
	./pkg/ratelimit/ ./pkg/search/ ./pkg/spec/ ./pkg/invoke/ 2>&1 | tee -a "$OUT"
awk '/^BenchmarkSearch-/ { for (i = 1; i < NF; i++) if ($(i+1) == "µs-median") printf "a search of github-full (20 hits), median: %.2f ms (target < 1 ms)\n", $i / 1000 }
     /^BenchmarkFirstSearch\/(cold|warm)-/ { split($1, n, "/"); sub(/-[0-9]+$/, "", n[2]); t = (n[2] == "cold") ? "0.25" : "0.06"
       for (i = 1; i < NF; i++) if ($(i+1) == "x-bare") printf "first search in process, %s: %.3fx the bare kin-openapi load (target <= %sx)\n", n[2], $i, t }' \
	"$OUT" | tee -a "$OUT"

echo "## governance end to end over MCP (./pkg/mcpserver/)" | tee -a "$OUT"
$GO test -run '^$' -bench GovernanceEndToEnd -benchtime=1x -timeout 10m ./pkg/mcpserver/ 2>&1 | tee -a "$OUT"

echo "## run_script vs invoke (issue 20)" | tee -a "$OUT"
$GO test -run '^$' -bench RunScriptVersusInvoke -benchtime=1x -timeout 10m ./pkg/mcpserver/ 2>&1 | tee -a "$OUT"
# The same tasks at the issue's 10 requests per 10s for the lookups too, in simulated time.
$GO test -count=1 -run TestRunScriptVersusInvokeAt10Per10s -v -timeout 10m ./pkg/mcpserver/ 2>&1 | grep -E 'simulated|^(ok|FAIL|---)' | tee -a "$OUT"

echo "## MCP over HTTP with auth and inbound limits, memory and Redis (./pkg/mcpserver/)" | tee -a "$OUT"
$GO test -run '^$' -bench 'BenchmarkHTTP' -benchtime=2s -timeout 10m ./pkg/mcpserver/ 2>&1 | tee -a "$OUT"

echo "## inbound JWTs (issue targets)" | tee -a "$OUT"
$GO test -run '^$' -bench 'BenchmarkJWTVerifyCachedKeys|BenchmarkRefuse1MBToken' -benchmem -benchtime=2s -timeout 10m ./pkg/inauth/ ./pkg/serve/ 2>&1 | tee -a "$OUT.jwt"
cat "$OUT.jwt" >>"$OUT"
awk '/^BenchmarkJWTVerifyCachedKeys\// { split($1, n, "/"); sub(/-[0-9]+$/, "", n[2]); printf "verify a %s JWT, keys cached: %.0f us (target <= 100 us)\n", n[2], $3 / 1e3 }
     /^BenchmarkRefuse1MBToken/ { printf "refuse a 1 MB bearer token: %d B allocated (target <= 65536 B)\n", $5 }' \
	"$OUT.jwt" | tee -a "$OUT"
rm -f "$OUT.jwt"

echo "## answers that fit the model's context (issue targets)" | tee -a "$OUT"
$GO test -run '^$' -bench 'ShapeGitHubPage670KB|JQProjection8MiB' -benchmem -timeout 10m ./pkg/answer/ 2>&1 | tee -a "$OUT.answers"
$GO test -run '^$' -bench 'Memory100LargeAnswers' -benchtime=1x -timeout 10m ./pkg/mcpserver/ 2>&1 | tee -a "$OUT.answers"
cat "$OUT.answers" >>"$OUT"
# The figures docs/performance.md quotes, with their targets.
awk '/^BenchmarkShapeGitHubPage670KB/ { for (i = 1; i < NF; i++) if ($(i+1) == "ms-median") printf "fit a 670 KB page into a 16 KiB answer, decode included, median: %s ms (target <= 20 ms)\n", $i }
     /^BenchmarkJQProjection8MiB\/decode\+run/ { printf "jq projection over 8 MiB, decode included: %.0f ms\n", $3 / 1e6 }
     /^BenchmarkMemory100LargeAnswers\// { split($1, name, "/"); sub(/-[0-9]+$/, "", name[2])
       for (i = 1; i < NF; i++) { if ($(i+1) == "heap-MB") heap = $i; if ($(i+1) == "store-MB") store = $i }
       printf "heap in use after 100 answers of 670 KB (%s): %s MB, the store holding %s MB (bound 64 MiB + 100 MB)\n", name[2], heap, store }' \
	"$OUT.answers" | tee -a "$OUT"
rm -f "$OUT.answers"

echo "# done: $OUT" | tee -a "$OUT"
