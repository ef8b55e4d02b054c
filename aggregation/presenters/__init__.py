"""Presenters: the text, labels and charts of pages, made from the selectors' numbers."""
