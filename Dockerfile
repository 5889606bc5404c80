# One image for every piweb process: web (daphne), the workers, beat and migrations (docker/entrypoint).
# Build: `make image`. Run: compose.yaml, and docs/operations.md "Deployment kit".
# BASE: any Debian-like image with python3 >= 3.12 and its venv module (Django 6.1 needs 3.12).
ARG BASE=python:3.12-slim-bookworm
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/piweb/bin:$PATH \
    DJANGO_SETTINGS_MODULE=piweb.settings \
    DJANGO_DEBUG=0 \
    PIWEB_DATA_DIR=/var/lib/piweb

RUN groupadd --system --gid 10001 piweb \
    && useradd --system --uid 10001 --gid piweb --home-dir /app --shell /usr/sbin/nologin piweb \
    && mkdir -p /app /var/lib/piweb \
    && python3 -m venv /opt/piweb

WORKDIR /app

# Dependencies first, from the project's own pyproject.toml (its version is read from piweb/__init__.py)
# at the versions requirements.lock pins (make lock), so a change to the code alone reuses this layer.
# The code runs from /app, not from site-packages.
COPY pyproject.toml requirements.lock ./
COPY piweb/__init__.py piweb/__init__.py
RUN pip install -c requirements.lock . && pip uninstall -y piweb

COPY . .
# Static files are collected into the image (whitenoise serves them, hashed); the key is a placeholder
# that only lets the settings load for this step. The data folder is the one place the user writes.
RUN DJANGO_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput -v0 \
    && chmod 0755 docker/entrypoint \
    && chown -R piweb:piweb /var/lib/piweb

USER piweb
EXPOSE 8000
VOLUME ["/var/lib/piweb"]
ENTRYPOINT ["/app/docker/entrypoint"]
CMD ["web"]
