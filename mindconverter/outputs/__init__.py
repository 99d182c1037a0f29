"""Writing results: atomic publishing, the checkpoint, the report and the weight map."""
