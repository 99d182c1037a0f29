"""Everything that runs a generated network: loading it with its checkpoint, ``--verify``
against onnxruntime, the divergence finder that names the first layer that differs, and
training parity with the source (``compare_training``)."""
