# Spindle control plane: `spindle server start --config /etc/spindle/config.yaml`.
#
#   docker build -t spindle:0.1.0 .
#   docker run -v $PWD/config.yaml:/etc/spindle/config.yaml -p 7233:7233 -p 9090:9090 spindle:0.1.0
#
# The configuration file is described in controlplane/cluster/_config.py (and docs/DEPLOYING_GCP.md).
# tests/deploy/test_dockerfile.py checks this file against the real CLI and the example configuration.

ARG PYTHON_VERSION=3.11

# ---------------------------------------------------------------- build: a wheel from the sources
FROM python:${PYTHON_VERSION}-slim AS build
WORKDIR /src
RUN pip install --no-cache-dir "build>=1.2"
COPY pyproject.toml README.md ./
COPY sdk ./sdk
COPY widgets ./widgets
COPY controlplane ./controlplane
RUN python -m build --wheel --outdir /dist .

# ---------------------------------------------------------------- runtime: the wheel, no build tools
FROM python:${PYTHON_VERSION}-slim AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# The Spanner store and the gs:// archive/blob store are the cluster's dependencies.
COPY --from=build /dist/ /tmp/dist/
RUN pip install "$(ls /tmp/dist/spindle-*.whl)[spanner,gcs]" && rm -rf /tmp/dist
COPY deploy/healthcheck.py /usr/local/bin/spindle-healthcheck
RUN chmod 0755 /usr/local/bin/spindle-healthcheck \
    && groupadd --system --gid 10001 spindle \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/spindle --create-home --shell /usr/sbin/nologin spindle \
    && mkdir -p /etc/spindle \
    && chown spindle:spindle /etc/spindle

# Numeric, so that Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 10001:10001
WORKDIR /var/lib/spindle

# 7233: public gRPC (WorkflowService, grpc.health.v1.Health); 7234: members' internal listener
# (mutual TLS); 9090: Prometheus metrics at /metrics (config `metrics: {listen: 0.0.0.0:9090}`).
EXPOSE 7233 7234 9090

# Asks grpc.health.v1.Health on the public port: SERVING once the member owns shards and the
# store answers. With TLS set SPINDLE_HEALTHCHECK_CA_FILE (and _SERVER_NAME); see the script.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 CMD ["spindle-healthcheck"]

ENTRYPOINT ["spindle", "server", "start"]
CMD ["--config", "/etc/spindle/config.yaml"]
