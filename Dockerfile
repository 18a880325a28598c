# One image for the API, the workers and the demo cast (different commands).
FROM node:20-bookworm-slim
RUN npm install -g pnpm@12.4.2
WORKDIR /app
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml turbo.json tsconfig.base.json tsconfig.json ./
COPY packages/shared/package.json packages/shared/
COPY packages/producer/package.json packages/producer/
COPY packages/workers/package.json packages/workers/
RUN pnpm install --frozen-lockfile
COPY . .
USER node
# Workers by default; the API runs `node packages/producer/bin/durable-a2a-api.mjs`.
CMD ["node", "packages/workers/bin/durable-a2a-workers.mjs"]
