FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY scrapers ./scrapers
COPY pipeline ./pipeline
COPY warehouse ./warehouse
COPY api ./api
# the lake extra: DuckLake/PostgreSQL extensions as packages, never downloaded at run time
RUN pip install --no-cache-dir '.[lake]'
ENV GPUPRICES_DB=/data/gpuprices.duckdb \
    GPUPRICES_HOST=0.0.0.0 \
    GPUPRICES_PORT=8000
VOLUME ["/data"]
EXPOSE 8000
CMD ["gpuprices", "serve"]
