# disagg-router image. Build: docker build -t disagg-router .
# Run (embedded simulated cluster): docker run -p 8000:8000 disagg-router
# Run (real workers): docker run -v $PWD/disagg.yaml:/etc/disagg-router/router.yaml \
#   -p 8000:8000 disagg-router --config /etc/disagg-router/router.yaml

# Build stage: the full dependency set (TypeScript) compiles src/ into dist/.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Runtime stage: production dependencies only, the compiled dist/ and the default config.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    DISAGG_HOST=0.0.0.0
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY config ./config
# The official image's unprivileged user (uid 1000).
USER node
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.DISAGG_PORT || 8000) + '/health').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "dist/main.js"]
CMD ["--config", "config/default.yaml"]
