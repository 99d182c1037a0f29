"""Orchestration: the user's settings checked once, the pipeline run under an ordered list of
strategies (dynamic dimensions kept, then fixed sizes), and the results written, verified and
published together. :func:`mindconverter.convert` is its public face."""
