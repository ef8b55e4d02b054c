FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
RUN DEBUG=1 SECRET_KEY=collectstatic-only python manage.py collectstatic --no-input

RUN useradd --create-home --uid 1000 studio && mkdir -p /data/media && chown -R studio /data /app
USER studio

EXPOSE 8000
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120"]
