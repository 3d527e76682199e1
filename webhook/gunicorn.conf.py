"""For `gunicorn -c webhook/gunicorn.conf.py 'webhook.app:create_app()'`: settings from RUNWAY_*.

`runway serve` does the same without this file; it exists for images that start gunicorn itself.
"""

import os

from webhook.gunicorn_options import gunicorn_options
from webhook.settings import Settings

globals().update(gunicorn_options(Settings.from_env(os.environ)))
