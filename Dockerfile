# syntax=docker/dockerfile:1
# Build stage: full install, compile TypeScript.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Scripts run later: `prepare` builds, and the sources are not copied yet.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts/bundle.mjs scripts/precompile.mjs ./scripts/
COPY ui ./ui
# The precompile step builds the app once (with the shipped fixtures) to list its schemas.
COPY fixtures ./fixtures
RUN npm run build

# Runtime stage: production dependencies and compiled output only, run as a non-root user.
FROM node:24-bookworm-slim AS runtime
# NODE_COMPILE_CACHE: compiled code kept on disk, relative to WORKDIR (the bin's cache of the
# server bundle, and Node's own of the modules loaded on first use).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4010 \
    NODE_COMPILE_CACHE=.node-compile-cache
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY fixtures ./fixtures
# Compile the server once into the image's compile cache (--help loads the bundle, then exits):
# the container answers its first health check sooner.
RUN node bin/gateway-emulator.js --help >/dev/null
USER node
EXPOSE 4010
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||4010)+'/_emulator/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "bin/gateway-emulator.js"]
