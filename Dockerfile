# One image for the three roles of the classic deployment: mqnamesrv, mqbroker, the console.
#   docker build -t rocketpy .
#   docker run rocketpy mqnamesrv            (or: mqbroker -c broker.conf -n HOST:9876, rocketpy console ...)
# The build stage compiles rocketpy._speedups (Cython, gcc); the run stage has no compiler and runs as the
# unprivileged user rocketmq, home /home/rocketmq: the store in ~/store, the logs in ~/logs/rocketmqlogs.
# BASE: any Debian-like image with python3 (3.11+) and its venv module, e.g. one made from a debootstrap rootfs
ARG BASE=python:3.11-slim
FROM ${BASE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY rocketpy ./rocketpy
RUN python3 -m venv /opt/rocketpy \
 && /opt/rocketpy/bin/pip install --no-cache-dir '.[console]' \
 && cd / && /opt/rocketpy/bin/python -c "import rocketpy._speedups"

FROM ${BASE}
RUN useradd --system --uid 3000 --user-group --create-home --home-dir /home/rocketmq rocketmq \
 && mkdir -p /home/rocketmq/store /home/rocketmq/logs/rocketmqlogs /home/rocketmq/conf \
 && chown -R rocketmq:rocketmq /home/rocketmq
COPY --from=build /opt/rocketpy /opt/rocketpy
ENV PATH=/opt/rocketpy/bin:$PATH \
    ROCKETMQ_HOME=/home/rocketmq \
    PYTHONUNBUFFERED=1
USER rocketmq
WORKDIR /home/rocketmq
VOLUME ["/home/rocketmq/store", "/home/rocketmq/logs"]
# NameServer, broker (VIP channel, remoting, HA), console
EXPOSE 9876 10909 10911 10912 8080
# SIGTERM stops each role cleanly (offsets and config flushed, the broker unregistered) within seconds
STOPSIGNAL SIGTERM
CMD ["mqnamesrv"]
