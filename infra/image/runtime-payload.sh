#!/usr/bin/env bash
# The image's runtime payload: the built packages and their production dependencies — nothing the
# tests need (no @tidemark/kafka-fixtures, so no testcontainers or ssh2; no @tidemark/testing, a
# module's test harness; no dev dependencies, so no vitest). The Dockerfile runs it;
# test/image/payload.process.test.ts runs it too and uses what it made.
#   infra/image/runtime-payload.sh <built repository> <destination>
set -euo pipefail
src=$(cd "$1" && pwd)
dest=$2
mkdir -p "$dest"
cp "$src/package.json" "$src/package-lock.json" "$dest/"
for dir in "$src"/packages/* "$src/examples"; do
  rel=${dir#"$src/"}
  case "$(basename "$dir")" in kafka-fixtures | fixtures | testing) continue ;; esac # tests only
  mkdir -p "$dest/$rel"
  cp "$dir/package.json" "$dest/$rel/"
  for part in dist bin assets; do
    if [ -d "$dir/$part" ]; then cp -r "$dir/$part" "$dest/$rel/"; fi
  done
done
cd "$dest"
# Only what the command and the example tools need at run time, exactly as locked.
npm ci --omit=dev --no-audit --no-fund --loglevel=error \
  --workspace @tidemark/cli --workspace @tidemark/examples
# The image has its own Node: drop the one the repository brings for older machines.
rm -rf node_modules/node-linux-* node_modules/node-darwin-* node_modules/.bin/node
