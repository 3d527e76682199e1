# The webhook image: `runway serve` on a slim Python, as an unprivileged user.
# (Not built in CI: these machines have no container engine.)
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY core ./core
COPY providers ./providers
COPY kubeio ./kubeio
COPY cli ./cli
COPY webhook ./webhook
COPY renderer ./renderer
COPY gateway ./gateway
COPY certs ./certs
COPY controller ./controller
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["runway"]
CMD ["serve", "--in-cluster", "--host", "0.0.0.0", "--port", "8443", "--cert", "/tls/tls.crt", "--key", "/tls/tls.key"]
