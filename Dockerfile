# The Runway image: `runway serve` (the webhook), `runway status-controller` and
# `runway gateway-sync`, on a slim Python, as an unprivileged user. Reproducible from this
# repository alone:
# - the base is pinned by its full tag (PYTHON_IMAGE below). Pin it by digest where your registry
#   can be reached: `docker buildx imagetools inspect python:3.11.7-slim-bookworm` prints it, and
#   `--build-arg PYTHON_IMAGE=python:3.11.7-slim-bookworm@sha256:...` uses it (docs/image.md);
# - every Python package, Runway's build backend included, is installed from a lock with hashes
#   (requirements/runtime.lock, requirements/build.lock; `make lock` regenerates both, and the
#   unit tier checks that they agree with pyproject.toml and with the tested virtualenv);
# - Runway itself is built without build isolation, so nothing is resolved at build time.
# `git` is inside: `runway render --push` and `runway gateway-sync` may run in the cluster.
# `make image` builds it as the chart deploys it (runway-webhook:<appVersion>) and `make image-push`
# pushes it: do so before `helm install --wait` (docs/image.md).
ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY requirements/build.lock requirements/runtime.lock ./requirements/
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements/build.lock \
 && pip install --no-cache-dir --require-hashes --no-deps --prefix=/install -r requirements/runtime.lock
COPY pyproject.toml README.md ./
COPY core ./core
COPY providers ./providers
COPY kubeio ./kubeio
COPY cli ./cli
COPY webhook ./webhook
COPY renderer ./renderer
COPY gateway ./gateway
COPY certs ./certs
COPY ui ./ui
COPY controller ./controller
RUN pip install --no-cache-dir --no-deps --no-build-isolation --prefix=/install .

FROM ${PYTHON_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /install /usr/local
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["runway"]
CMD ["serve", "--in-cluster", "--host", "0.0.0.0", "--port", "8443", "--cert", "/tls/tls.crt", "--key", "/tls/tls.key"]
