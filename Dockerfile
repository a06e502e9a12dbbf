# syntax=docker/dockerfile:1
# Tidemark: one image for the gateway, the worker and the topics job (the command picks the role).
#   docker build -t tidemark .
#   docker run tidemark gateway --port 3000        (see `tidemark --help`)
# Tool modules: build a derived image — FROM tidemark, COPY your modules, run with --tools.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json turbo.json tsconfig.base.json ./
COPY packages ./packages
COPY examples ./examples
# The image has its own Node 24: drop the one the repository brings for older machines.
RUN npm ci --no-audit --no-fund && TURBO_TELEMETRY_DISABLED=1 npx turbo run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/node-linux-* node_modules/node-darwin-* node_modules/.bin/node

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
RUN groupadd --system --gid 10001 tidemark && useradd --system --uid 10001 --gid tidemark --home /app tidemark
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/packages ./packages
COPY --from=build --chown=root:root /app/examples ./examples
COPY --from=build --chown=root:root /app/package.json ./package.json
USER 10001:10001
EXPOSE 3000
ENTRYPOINT ["node", "/app/packages/cli/dist/bin.js"]
CMD ["--help"]
