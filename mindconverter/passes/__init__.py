"""The passes that edit the graph, one module each, and the ordered list that is the pipeline."""
