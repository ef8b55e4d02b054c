"""Importing samples: our JSONL format and the published Multi-Crit row format (JSONL/Parquet).

`service.samples_import` is the entry point; `errors` holds what a refused file reports. The
readers and limits import no Django model, so scripts and the judging readers can use them.
"""
