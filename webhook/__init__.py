"""The admission webhook: Flask app served by gunicorn over TLS (issue #4)."""
