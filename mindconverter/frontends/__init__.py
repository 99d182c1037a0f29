"""Reading model files: ONNX (with external data) and TensorFlow frozen graphs via tf2onnx."""
