# benchreg: one image for the web app, the server-side Celery worker and beat, and lab-machine agents.
# Agents run the same image with only the broker URL and the registry's HTTPS API: no database settings.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    BENCHREG_DATA_DIR=/data

# WeasyPrint (reports) needs Pango and fonts; nothing else is compiled here. Noto CJK draws Chinese, Japanese and
# Korean names; what no installed font has is written as code points (docs/reports.md, "Text the fonts cannot draw").
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 \
       fontconfig fonts-dejavu-core fonts-noto-cjk \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# The CPU build of torch first, from PyTorch's own index; otherwise pip resolves the CUDA wheels (GBs).
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY runners ./runners
COPY registry ./registry
RUN pip install ".[registry,torch]"

RUN useradd --create-home --uid 10001 benchreg \
    && mkdir -p /data /agent /enrolment \
    && chown benchreg:benchreg /data /agent /enrolment
USER benchreg

EXPOSE 8000
CMD ["benchreg", "serve", "--bind", "0.0.0.0:8000"]
