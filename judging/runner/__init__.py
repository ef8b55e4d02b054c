"""The judge runner: call any multimodal judge through an OpenAI-compatible API.

Pure parts (no Django): ``cache`` (the exact cache key), ``requests`` (the chat request of one
row, run and order), ``client`` (async HTTP with bounded concurrency, a token bucket and retries),
``estimate`` and ``figures`` (the runner's scorecard figures). ``run`` orchestrates them over a
dataset version and stores every call; ``holistic`` asks one overall preference per sample.
"""
