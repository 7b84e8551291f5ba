# A minimal image: one stateless Orrery replica. Run several behind any HTTP load balancer with a
# shared ORRERY_DATABASE_URL (PostgreSQL), ORRERY_BLOB_URL (S3-compatible) and ORRERY_SECRET.
#
# Built as `npm install` builds a checkout: `npm ci` installs every dependency and its `prepare`
# script compiles src/ into dist/ (scripts/build.mjs) and the web console into console/dist/
# (scripts/build-console.mjs, Vite); the development dependencies (TypeScript, Vite, React) are
# then pruned, and the image runs the compiled build with plain node, as a non-root user.
FROM node:20-bookworm-slim AS build
WORKDIR /app
# Compilers only for a native module without a prebuilt binary for this platform.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY console ./console
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production ORRERY_HOST=0.0.0.0 ORRERY_PORT=8080 ORRERY_DATA_DIR=/data
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/console/dist ./console/dist
COPY package.json ./
COPY bin ./bin
# The embedded data folder (SQLite, blobs) belongs to the user the server runs as.
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s CMD node -e "fetch('http://127.0.0.1:8080/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--max-semi-space-size=8", "dist/cli.js", "serve"]
