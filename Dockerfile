# A minimal image: one stateless Orrery replica. Run several behind any HTTP load balancer with a
# shared ORRERY_DATABASE_URL (PostgreSQL), ORRERY_BLOB_URL (S3-compatible) and ORRERY_SECRET.
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production ORRERY_HOST=0.0.0.0 ORRERY_PORT=8080 ORRERY_DATA_DIR=/data
COPY --from=build /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s CMD node -e "fetch('http://127.0.0.1:8080/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--import", "tsx", "src/cli.ts", "serve"]
