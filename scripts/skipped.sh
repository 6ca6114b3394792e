#!/usr/bin/env bash
# Says, one line per group, which tests `make test` is about to skip and
# why: the same conditions the tests check before they t.Skip.
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null 2>&1 || [ ! -d test/ts/node_modules ]; then
  echo "skipping: the TypeScript MCP SDK end-to-end test (needs node and test/ts/node_modules: cd test/ts && npm ci)"
fi
if [ ! -d test/conformance/node_modules ]; then
  echo "skipping: the MCP conformance suite (needs test/conformance/node_modules: cd test/conformance && npm ci --ignore-scripts)"
fi
if ! command -v redis-server >/dev/null 2>&1; then
  echo "skipping: the shared-store tests on Redis (redis-server is not on PATH)"
elif ! command -v redis-cli >/dev/null 2>&1; then
  echo "skipping: the Redis Cluster tests (redis-cli is not on PATH)"
fi
if [ ! -d ../shared/specs ]; then
  echo "skipping: the tests over the real API specs, large-spec tests included (../shared/specs is absent)"
fi
echo "skipping: the corpus sweep against Prism (make sweep runs it)"
exit 0
