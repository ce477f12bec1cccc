FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY scrapers ./scrapers
COPY pipeline ./pipeline
COPY warehouse ./warehouse
COPY api ./api
# the lake extra: DuckLake/PostgreSQL extensions as packages, never downloaded at run time
RUN pip install --no-cache-dir '.[lake]'
# Runs as an unprivileged user. The mount points belong to it, so a new named volume (which
# takes its owner from the image) is writable; a bind mount must be writable by uid 10001.
RUN useradd --system --uid 10001 --user-group --no-create-home gpuprices \
    && mkdir -p /data /lake \
    && chown gpuprices:gpuprices /data /lake
ENV GPUPRICES_DB=/data/gpuprices.duckdb \
    GPUPRICES_HOST=0.0.0.0 \
    GPUPRICES_PORT=8000
VOLUME ["/data"]
EXPOSE 8000
USER 10001:10001
CMD ["gpuprices", "serve"]
