# Muster operator image: multi-stage, slim, runs as a non-root user with a
# read-only root filesystem (see charts/muster/templates/deployment.yaml).
#
# Reproducible: the base image is one exact Python release, and every Python package
# comes from requirements/runtime.txt, checked against its hash (`make lock` renews
# it). For a release, pin the base by digest too:
#   docker build --build-arg BASE=python:3.11.7-slim-bookworm@sha256:<digest> .
# (`docker buildx imagetools inspect python:3.11.7-slim-bookworm` prints it).
ARG BASE=python:3.11.7-slim-bookworm

FROM ${BASE} AS build
RUN python -m venv /opt/muster
COPY requirements/runtime.txt /src/requirements/
RUN /opt/muster/bin/pip install --no-cache-dir --require-hashes --no-deps \
        -r /src/requirements/runtime.txt
COPY pyproject.toml README.md /src/
COPY src /src/src
RUN /opt/muster/bin/pip install --no-cache-dir --no-deps --no-build-isolation /src

FROM ${BASE}
COPY --from=build /opt/muster /opt/muster
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin muster
USER 65532:65532
ENV PATH=/opt/muster/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
EXPOSE 9443 8080
ENTRYPOINT ["muster", "run"]
