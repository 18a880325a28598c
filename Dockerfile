# syntax=docker/dockerfile:1
# One image for the API, the workers and the CLI: compiled JavaScript (dist/)
# with production dependencies only (`pnpm deploy --prod`), run by plain node
# as the non-root user `node`. Build: docker build -t "$DA2A_IMAGE" .
#   workers (default): node /app/workers/bin/durable-a2a-workers.mjs
#   API:               node /app/api/bin/durable-a2a-api.mjs
#   CLI:               node /app/cli/bin/durable-a2a.mjs
# The `demo` target adds the demo agents (TypeScript sources through tsx).

FROM node:24-bookworm-slim AS build
RUN npm install -g pnpm@12.4.2
WORKDIR /src
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml turbo.json tsconfig.base.json tsconfig.build.json tsconfig.json ./
COPY packages/a2a/package.json packages/a2a/
COPY packages/shared/package.json packages/shared/
COPY packages/producer/package.json packages/producer/
COPY packages/workers/package.json packages/workers/
COPY packages/testing/package.json packages/testing/
COPY packages/cli/package.json packages/cli/
RUN pnpm install --frozen-lockfile
COPY scripts/ scripts/
COPY packages/ packages/
RUN pnpm build \
  && pnpm --filter @durable-a2a/workers deploy --prod /app/workers \
  && pnpm --filter @durable-a2a/producer deploy --prod /app/api \
  && pnpm --filter @durable-a2a/cli deploy --prod /app/cli

FROM build AS demo
COPY demo/ demo/
COPY test/harness/ test/harness/
USER node
CMD ["node", "--conditions=@durable-a2a/source", "--import", "tsx", "demo/agents.ts"]

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app /app
USER node
CMD ["node", "/app/workers/bin/durable-a2a-workers.mjs"]
