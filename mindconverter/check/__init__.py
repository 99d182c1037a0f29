"""Everything that runs a generated network: loading it with its checkpoint, ``--verify``
against onnxruntime, and the divergence finder that names the first layer that differs."""
