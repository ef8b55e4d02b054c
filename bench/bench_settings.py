"""Settings for bench/labeling.py only: the product settings plus a bench URLconf."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.benchurls"
