"""Code generation: the mapped graph and its module tree become a readable MindSpore script."""
