# Muster operator image: multi-stage, runs as a non-root user (65532) with a
# read-only root file system (see charts/muster/templates/deployment.yaml).
#
# `make image` builds it (hack/image.sh): BASE and BUILD_BASE are Debian bookworm's
# essential packages and python3 (BUILD_BASE adds python3-venv), made by mmdebstrap
# and imported into podman's store, so the build needs no registry.
#
# Reproducible: every Python package comes from requirements/runtime.txt as a wheel
# (build/image/wheels, which hack/image.sh downloads) checked against its hash
# (`make lock` renews it), so nothing is compiled; the modules' bytecode is checked by
# hash rather than by mtime (SOURCE_DATE_EPOCH), and `podman build --timestamp` dates
# every file and the image itself. pip, used to install, is not in the final image.
ARG BASE
ARG BUILD_BASE

FROM ${BUILD_BASE} AS build
ARG SOURCE_DATE_EPOCH
ENV SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH}
RUN python3 -m venv /opt/muster
COPY requirements/runtime.txt /src/requirements/
COPY build/image/wheels /src/wheels
RUN /opt/muster/bin/pip install --no-cache-dir --require-hashes --no-deps --only-binary :all: \
        --no-index --find-links /src/wheels -r /src/requirements/runtime.txt
COPY pyproject.toml README.md /src/
COPY src /src/src
RUN /opt/muster/bin/pip install --no-cache-dir --no-deps --no-build-isolation /src \
    && /opt/muster/bin/pip uninstall --yes --quiet pip \
    && rm /opt/muster/bin/[Aa]ctivate*

FROM ${BASE}
ARG CREATED
LABEL org.opencontainers.image.created=${CREATED}
# The user, written rather than made by useradd, which dates /etc/shadow by the day
# and fills /var/log/lastlog up to the uid's record.
RUN echo 'muster:x:65532:65532:Muster:/nonexistent:/usr/sbin/nologin' >> /etc/passwd \
    && echo 'muster:x:65532:' >> /etc/group
COPY --from=build /opt/muster /opt/muster
USER 65532:65532
ENV PATH=/opt/muster/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
EXPOSE 9443 8080
ENTRYPOINT ["muster", "run"]
