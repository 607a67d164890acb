# agentworld environments as an OpenEnv server (agentworld serve-openenv).
#   docker build -f docker/openenv.Dockerfile -t agentworld-openenv .
#   docker run --rm -p 127.0.0.1:8000:8000 agentworld-openenv
# Build with --build-arg ENVS="agentworld/retail-v0 agentworld/<other>-v0" to serve other environments.
FROM python:3.11-slim

WORKDIR /opt/agentworld
COPY pyproject.toml constraints.txt README.md ./
COPY agentworld_envs ./agentworld_envs
COPY agentworld_rl ./agentworld_rl
COPY agentworld_verifiers ./agentworld_verifiers
COPY env_registry ./env_registry
RUN pip install --no-cache-dir -c constraints.txt ".[openenv]"

ARG ENVS="agentworld/retail-v0"
ENV ENVS=${ENVS} \
    AGENTWORLD_CACHE=/var/cache/agentworld \
    PYTHONUNBUFFERED=1
# Build the served environments into the image, so a session never waits for a first build.
RUN agentworld build ${ENVS} --jobs 1

# The container's own interface: publish it on the host's loopback (-p 127.0.0.1:8000:8000).
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"
CMD ["sh", "-c", "exec agentworld serve-openenv ${ENVS} --host 0.0.0.0 --port 8000"]
