"""Shared pytest setup: MindSpore in PyNative mode, quiet logs."""

import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore: errors only
